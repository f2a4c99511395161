"""Build the deployable artifacts locally, without Docker: ``python -m infra.build [agent|layer|extension|...]``.

* ``build/agent/``: the AgentCore direct-code bundle: ``main.py`` (runs ``python -m runtime_handler``), the
  ``runtime_handler`` and ``memory_adapter`` sources and Linux arm64 CPython 3.12 wheels of every dependency.
* ``build/layer/python/``: the Lambda layer: ``memory_adapter`` and its dependencies for arm64, Python 3.12.
* ``build/hindsight_ext.zip``: ``hindsight_isolation`` + ``memory_adapter`` sources (no dependencies: the stock
  Hindsight image has PyJWT, cryptography and boto3), unpacked into the Hindsight tasks by their init container.
* ``build/projects/<name>/``: the bundle of an agent you bring (``python -m infra.build project <dir>``): your
  project's files at the root (its entrypoint included), ``memory_adapter`` (the memory wiring the reference agent
  uses) and Linux arm64 CPython 3.12 wheels of your ``requirements.txt`` plus the wiring's ``[agentcore]`` extra.
* ``build/db_provisioning/``: the database provisioning function (``infra/functions/db_provisioning``) with its
  pure-Python PostgreSQL driver, pg8000.
* ``build/retain_replay/``, ``build/memory_admin/``: the retain queue's replay function and the memory
  administration functions (``infra/functions/retain_replay``, ``infra/functions/memory_admin``), each with
  Powertools for arm64, Python 3.12; ``memory_adapter`` comes from the layer, boto3 from the Lambda runtime.

Everything is resolved in one pip run per artifact with ``build-constraints.txt`` (hindsight-client accepts
python-dateutil 4.x while botocore needs <3: one resolver pass with the constraint keeps both satisfied). Bytecode is
compiled by the target interpreter (``--invalidation-mode unchecked-hash``: zip timestamps are normalised, so
mtime-based ``.pyc`` would be ignored). Size budgets are checked here and by ``tests/infra``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Sequence
from pathlib import Path

from memory_adapter.agentcore.project import DEFAULT_PROJECT_ENTRYPOINT, project_problems

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
AGENT_DIR = BUILD / "agent"
LAYER_DIR = BUILD / "layer"
EXTENSION_ZIP = BUILD / "hindsight_ext.zip"
PROVISIONING_DIR = BUILD / "db_provisioning"
PROVISIONING_SRC = Path(__file__).resolve().parent / "functions" / "db_provisioning"
#: The provisioning function's only dependency besides the Lambda runtime's boto3 (pure Python, any platform).
PROVISIONING_REQUIREMENTS = ("pg8000>=1.31,<1.32",)
REPLAY_DIR = BUILD / "retain_replay"
REPLAY_SRC = Path(__file__).resolve().parent / "functions" / "retain_replay"
ADMIN_DIR = BUILD / "memory_admin"
ADMIN_SRC = Path(__file__).resolve().parent / "functions" / "memory_admin"
CONSTRAINTS = Path(__file__).resolve().parent / "build-constraints.txt"
ADAPTER_SRC = ROOT / "layers" / "memory_adapter" / "src" / "memory_adapter"
ADAPTER_PYPROJECT = ROOT / "layers" / "memory_adapter" / "pyproject.toml"
AGENT_REQUIREMENTS = ROOT / "runtime_handler" / "requirements.txt"
PROJECTS_DIR = BUILD / "projects"
PROJECT_REQUIREMENTS = "requirements.txt"
#: The memory adapter's extra that holds the wiring's run-time dependencies (see its pyproject).
WIRING_EXTRA = "agentcore"

TARGET_PLATFORM = "manylinux2014_aarch64"
TARGET_PYTHON = "3.12"  # AgentCore PYTHON_3_12 and the layer's lowest runtime

#: Unzipped size budgets in MiB (AgentCore and Lambda limits are far higher: these catch dependency creep).
AGENT_BUDGET_MIB = 120
LAYER_BUDGET_MIB = 60
PROJECT_BUDGET_MIB = 250  # a framework (Strands: OpenTelemetry, MCP, pydantic) is larger than the reference agent
EXTENSION_BUDGET_KIB = 512
PROVISIONING_BUDGET_MIB = 5
REPLAY_BUDGET_MIB = 20
ADMIN_BUDGET_MIB = 20

#: The agent's shim entry point: AgentCore runs ``python main.py`` from the bundle root.
AGENT_MAIN = (
    '"""AgentCore entry point: run the runtime_handler package as ``python -m runtime_handler`` would."""\n'
    'import runpy\n\nrunpy.run_module("runtime_handler", run_name="__main__", alter_sys=True)\n'
)

_SKIP = {"__pycache__", ".mypy_cache", ".pytest_cache"}
_FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


class BuildError(RuntimeError):
    """An artifact could not be built or is over budget."""


def tree_size(path: Path) -> int:
    """Total bytes of the regular files under path."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _pip_install(target: Path, requirements: Sequence[str]) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--target",
        str(target),
        "--platform",
        TARGET_PLATFORM,
        "--implementation",
        "cp",
        "--python-version",
        TARGET_PYTHON,
        "--only-binary=:all:",
        "--upgrade",
        "-c",
        str(CONSTRAINTS),
        *requirements,
    ]
    subprocess.run(command, check=True)  # noqa: S603 (fixed argv, our own interpreter)


def _copy_package(source: Path, destination: Path) -> None:
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*_SKIP, "*.pyc"), dirs_exist_ok=True)


def find_interpreter(python_version: str) -> str | None:
    """A working ``python<version>`` (PATH, then pyenv's versions), or None."""
    candidates = [shutil.which(f"python{python_version}")]
    candidates += [
        str(p) for p in sorted(Path.home().glob(f".pyenv/versions/{python_version}*/bin/python{python_version}"))
    ]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False)  # noqa: S603
        if probe.returncode == 0:
            return candidate
    return None


def _compile(path: Path, python_version: str) -> bool:
    """Compile .pyc with the target interpreter if one is installed; return whether it was."""
    interpreter = find_interpreter(python_version)
    if interpreter is None:
        print(f"note: python{python_version} not found; shipping sources without .pyc", file=sys.stderr)
        return False
    subprocess.run(  # noqa: S603 (fixed argv)
        [interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(path)],
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    return True


def _prune(path: Path) -> None:
    """Drop what never runs in the target: tests, type stubs' caches, bundled pip metadata RECORD churn."""
    for pattern in ("**/tests", "**/__pycache__/*.cpython-3[0-9][0-9]*.opt-*.pyc"):
        for p in path.glob(pattern):
            if p.is_dir() and p.parent.name not in ("python",):
                shutil.rmtree(p, ignore_errors=True)
    for p in path.rglob("bin"):
        if p.is_dir() and p.parent == path:
            shutil.rmtree(p)


def _check_budget(name: str, path: Path, budget_bytes: int) -> int:
    size = tree_size(path) if path.is_dir() else path.stat().st_size
    if size > budget_bytes:
        raise BuildError(f"{name} is {size / 2**20:.1f} MiB, over its budget of {budget_bytes / 2**20:.1f} MiB")
    return size


#: Used only while ``runtime_handler/requirements.txt`` does not exist: the agent's direct imports.
FALLBACK_AGENT_REQUIREMENTS = (
    "bedrock-agentcore>=1.25.0,<2",
    "aws-lambda-powertools>=3.37.0,<4",
    "pyjwt[crypto]>=2.15.1,<3",
    "boto3>=1.40,<2",
)


def agent_requirements() -> list[str]:
    """``-r runtime_handler/requirements.txt``; memory_adapter itself is copied as source."""
    if not AGENT_REQUIREMENTS.exists():
        print(f"note: {AGENT_REQUIREMENTS.relative_to(ROOT)} is missing; using the fallback list", file=sys.stderr)
        return list(FALLBACK_AGENT_REQUIREMENTS)
    return ["-r", str(AGENT_REQUIREMENTS)]


def adapter_dependencies(*extras: str) -> list[str]:
    """memory_adapter's declared runtime dependencies, plus those of ``extras`` (its pyproject is the one source)."""
    project = tomllib.loads(ADAPTER_PYPROJECT.read_text())["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [extra for extra in extras if extra not in optional]
    if unknown:
        raise BuildError(f"memory_adapter has no extra {unknown[0]!r}")
    return [*project.get("dependencies", []), *(dep for extra in extras for dep in optional[extra])]


def project_bundle_dir(project: str | Path) -> Path:
    """Where ``python -m infra.build project <project>`` writes the bundle of an agent project (and the stack reads
    it): ``build/projects/<the project folder's name>``."""
    return PROJECTS_DIR / Path(project).resolve().name


def build_project(project: str | Path, entrypoint: str = DEFAULT_PROJECT_ENTRYPOINT) -> int:
    """Bundle the agent project ``project`` into :func:`project_bundle_dir` and return the bundle's size in bytes.

    The same recipe as the reference agent's bundle: one resolver pass for the project's ``requirements.txt`` (if it
    has one), the wiring's extra and memory_adapter's dependencies (Linux arm64, CPython 3.12, wheels only), then
    ``memory_adapter`` and the project's files at the root, bytecode compiled by the target interpreter.
    """
    problems = project_problems(project, entrypoint)
    if problems:
        raise BuildError("; ".join(problems))
    source = Path(project).resolve()
    target = project_bundle_dir(source)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    requirements = source / PROJECT_REQUIREMENTS
    user = ["-r", str(requirements)] if requirements.is_file() else []
    _pip_install(target, [*user, *adapter_dependencies(WIRING_EXTRA)])
    ignore = shutil.ignore_patterns(*_SKIP, "*.pyc", ".venv", PROJECT_REQUIREMENTS)
    shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)
    _copy_package(ADAPTER_SRC, target / "memory_adapter")
    _prune(target)
    _compile(target, TARGET_PYTHON)
    return _check_budget(f"agent project bundle {source.name}", target, PROJECT_BUDGET_MIB * 2**20)


def build_agent() -> int:
    """Build ``build/agent`` and return its size in bytes."""
    shutil.rmtree(AGENT_DIR, ignore_errors=True)
    AGENT_DIR.mkdir(parents=True)
    _pip_install(AGENT_DIR, [*agent_requirements(), *adapter_dependencies()])
    _copy_package(ROOT / "runtime_handler", AGENT_DIR / "runtime_handler")
    _copy_package(ADAPTER_SRC, AGENT_DIR / "memory_adapter")
    (AGENT_DIR / "runtime_handler" / "requirements.txt").unlink(missing_ok=True)
    (AGENT_DIR / "main.py").write_text(AGENT_MAIN)
    _prune(AGENT_DIR)
    _compile(AGENT_DIR, TARGET_PYTHON)
    return _check_budget("agent bundle", AGENT_DIR, AGENT_BUDGET_MIB * 2**20)


def build_layer() -> int:
    """Build ``build/layer/python`` and return its size in bytes."""
    shutil.rmtree(LAYER_DIR, ignore_errors=True)
    target = LAYER_DIR / "python"
    target.mkdir(parents=True)
    _pip_install(target, adapter_dependencies())
    _copy_package(ADAPTER_SRC, target / "memory_adapter")
    _prune(target)
    _compile(target, TARGET_PYTHON)
    return _check_budget("layer", LAYER_DIR, LAYER_BUDGET_MIB * 2**20)


def build_extension() -> int:
    """Build ``build/hindsight_ext.zip`` deterministically (same sources, same bytes, same asset hash)."""
    BUILD.mkdir(exist_ok=True)
    sources = {
        "hindsight_isolation": ROOT / "hindsight_isolation",
        "memory_adapter": ADAPTER_SRC,
    }
    files: list[tuple[str, Path]] = []
    for name, source in sources.items():
        for path in sorted(source.rglob("*.py")):
            if not _SKIP & set(path.relative_to(source).parts):
                files.append((f"{name}/{path.relative_to(source).as_posix()}", path))
    with zipfile.ZipFile(EXTENSION_ZIP, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for arcname, path in files:
            info = zipfile.ZipInfo(arcname, date_time=_FIXED_ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return _check_budget("isolation extension", EXTENSION_ZIP, EXTENSION_BUDGET_KIB * 1024)


def build_provisioning() -> int:
    """Build ``build/db_provisioning`` (the function's source plus pg8000) and return its size in bytes."""
    shutil.rmtree(PROVISIONING_DIR, ignore_errors=True)
    PROVISIONING_DIR.mkdir(parents=True)
    _pip_install(PROVISIONING_DIR, list(PROVISIONING_REQUIREMENTS))
    shutil.copy2(PROVISIONING_SRC / "index.py", PROVISIONING_DIR / "index.py")
    _prune(PROVISIONING_DIR)
    return _check_budget("database provisioning function", PROVISIONING_DIR, PROVISIONING_BUDGET_MIB * 2**20)


def _build_layer_function(source: Path, target: Path, label: str, budget_mib: int) -> int:
    """Build ``target`` from a function on the memory adapter layer: its ``index.py`` and its ``requirements.txt``
    (Powertools), for the layer's Python; return its size."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    _pip_install(target, ["-r", str(source / "requirements.txt")])
    shutil.copy2(source / "index.py", target / "index.py")
    _prune(target)
    _compile(target, TARGET_PYTHON)
    return _check_budget(label, target, budget_mib * 2**20)


def build_replay() -> int:
    """Build ``build/retain_replay`` (the handler and Powertools, for the layer's Python); return its size."""
    return _build_layer_function(REPLAY_SRC, REPLAY_DIR, "retain replay function", REPLAY_BUDGET_MIB)


def build_admin() -> int:
    """Build ``build/memory_admin`` (the admin handlers and Powertools, for the layer's Python); return its size."""
    return _build_layer_function(ADMIN_SRC, ADMIN_DIR, "memory admin functions", ADMIN_BUDGET_MIB)


def sha256(path: Path) -> str:
    """Hex digest of a file (the init container checks the extension zip against it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: Sequence[str]) -> int:
    """Build the named artifacts (default: all) and print their sizes."""
    builders = {
        "agent": build_agent,
        "layer": build_layer,
        "extension": build_extension,
        "provisioning": build_provisioning,
        "replay": build_replay,
        "admin": build_admin,
    }
    if argv[:1] == ["project"]:
        if len(argv) not in (2, 3):
            print("usage: python -m infra.build project <project folder> [<entrypoint>]", file=sys.stderr)
            return 2
        print(f"project {Path(argv[1]).name}: resolving and installing its Linux arm64 wheels ...", flush=True)
        try:
            size = build_project(argv[1], *argv[2:])
        except BuildError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"project {Path(argv[1]).name}: {size / 2**20:.2f} MiB -> {project_bundle_dir(argv[1])}")
        return 0
    names = list(argv) or list(builders)
    unknown = [n for n in names if n not in builders]
    if unknown:
        usage = f"[{'|'.join(builders)}] ... | project <folder> [<entrypoint>]"
        print(f"usage: python -m infra.build {usage}", file=sys.stderr)
        return 2
    try:
        for step, name in enumerate(names, 1):
            # A long step (pip resolving and downloading arm64 wheels) says what it is before it starts.
            print(f"[{step}/{len(names)}] {name} ...", flush=True)
            size = builders[name]()
            print(f"[{step}/{len(names)}] {name}: {size / 2**20:.2f} MiB", flush=True)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
