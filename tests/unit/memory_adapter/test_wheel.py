"""``make wheel`` builds the memory_adapter package that other projects install (it is not on PyPI).

The wheel is built by the Makefile target itself (an isolated build, as a user runs it), then installed without its
dependencies into a fresh virtualenv that borrows the project venv's site-packages only as a plain path for the
dependencies (resolving them from PyPI would take minutes). Its ``.pth`` files are not read, so the editable
checkout cannot stand in for the wheel: the import must come from the fresh venv.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "layers" / "memory_adapter"
SOURCES = PACKAGE / "src"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _version() -> str:
    return str(tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]["version"])


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    # -o: take the project venv as it is (never re-install the shared venv from a test).
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-o",
            f"{Path(sys.prefix) / '.installed'}",
            "wheel",
            f"WHEEL_DIR={dist}",
            f"VENV={sys.prefix}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    wheels = list(dist.glob("*.whl"))
    assert [w.name for w in wheels] == [f"memory_adapter-{_version()}-py3-none-any.whl"]
    assert f"pip install '{wheels[0]}[strands]'" in done.stdout  # the target says how to use it
    return wheels[0]


def test_the_wheel_holds_every_module_and_the_typing_marker(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {str(p.relative_to(SOURCES)) for p in SOURCES.rglob("*.py") if "__pycache__" not in p.parts}
    assert expected - names == set()
    assert "memory_adapter/py.typed" in names
    assert not (PACKAGE / "build").exists()  # the target leaves no build tree behind


def test_the_wheel_declares_the_extras_the_docs_install(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    assert "Name: memory-adapter" in text
    for extra in ("agentcore", "strands", "langgraph"):
        assert f"Provides-Extra: {extra}" in text
    assert 'strands-agents<2,>=1.62; extra == "strands"' in text


def test_the_wheel_installs_into_a_fresh_venv_and_imports(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)],
        check=True,
        timeout=120,
        env=_clean_env(),
    )
    fresh_site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (fresh_site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = (
        "import memory_adapter, memory_adapter.identity, memory_adapter.agentcore, memory_adapter.tools;"
        "from importlib.metadata import version; print(memory_adapter.__file__); print(version('memory-adapter'))"
    )
    done = subprocess.run([str(python), "-I", "-c", probe], capture_output=True, text=True, env=_clean_env())
    assert done.returncode == 0, done.stderr[-2000:]
    location, installed = done.stdout.split()
    assert Path(location).is_relative_to(fresh_site)
    assert installed == _version()


def test_no_doc_installs_the_package_by_a_name_the_project_does_not_own() -> None:
    # "memory-adapter" on PyPI is not ours: every install goes through the checkout or the built wheel.
    texts = {p: p.read_text() for p in [*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), *ROOT.glob("*/README.md")]}
    texts |= {p: p.read_text() for p in [*PACKAGE.glob("README.md"), *SOURCES.rglob("*.py"), ROOT / "Makefile"]}
    bare = re.compile(r"pip install ['\"]?memory[-_]adapter\b")
    assert [str(p.relative_to(ROOT)) for p, text in texts.items() if bare.search(text)] == []
    wheel_name = f"memory_adapter-{_version()}-py3-none-any.whl"
    for doc in (ROOT / "docs" / "own-agent.md", PACKAGE / "README.md"):
        assert wheel_name in doc.read_text(), doc
