"""The built artifacts: Linux arm64 / CPython 3.12 wheels only, importable code, within their size budgets."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from infra import build
from memory_adapter.agentcore.project import DEFAULT_PROJECT_ENTRYPOINT, project_problems

_OK_PLATFORM = ("any", "manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64", "linux_aarch64")


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is not built (make build)")
    return path


def _wheel_tags(root: Path) -> dict[str, list[str]]:
    tags: dict[str, list[str]] = {}
    for wheel in root.glob("*.dist-info/WHEEL"):
        tags[wheel.parent.name] = [
            line.split(":", 1)[1].strip() for line in wheel.read_text().splitlines() if line.startswith("Tag:")
        ]
    return tags


def _assert_arm64_cp312(root: Path) -> None:
    tags = _wheel_tags(root)
    assert tags, f"no wheels in {root}"
    for dist, dist_tags in tags.items():
        assert any(
            t.split("-")[0] in ("py3", "py2.py3", "cp312")
            or t.startswith(("cp312-", "cp38-abi3", "cp39-abi3", "cp310-abi3", "cp311-abi3"))
            for t in dist_tags
        ), (dist, dist_tags)
        assert any(t.split("-")[2] in _OK_PLATFORM or "aarch64" in t.split("-")[2] for t in dist_tags), (
            dist,
            dist_tags,
        )
    for so in root.rglob("*.so"):
        assert "x86_64" not in so.name, so
        assert "cpython-311" not in so.name, so


def test_agent_bundle_is_arm64_importable_and_within_budget() -> None:
    root = _require(build.AGENT_DIR)
    _assert_arm64_cp312(root)
    assert (root / "main.py").read_text() == build.AGENT_MAIN
    assert (root / "runtime_handler" / "__main__.py").exists()
    assert (root / "memory_adapter" / "identity" / "bank_ids.py").exists()
    assert build.tree_size(root) <= build.AGENT_BUDGET_MIB * 2**20
    assert list((root / "runtime_handler").rglob("*.cpython-312.pyc"))


def test_layer_is_arm64_and_within_budget() -> None:
    root = _require(build.LAYER_DIR / "python")
    _assert_arm64_cp312(root)
    assert (root / "memory_adapter" / "__init__.py").exists()
    assert (root / "hindsight_client").is_dir()
    assert build.tree_size(build.LAYER_DIR) <= build.LAYER_BUDGET_MIB * 2**20
    dateutil = [d for d in root.glob("python_dateutil-*.dist-info")]
    assert dateutil
    assert dateutil[0].name.split("-")[1].startswith("2.")


def test_extension_zip_holds_only_our_sources_and_imports(tmp_path: Path) -> None:
    archive = _require(build.EXTENSION_ZIP)
    assert archive.stat().st_size <= build.EXTENSION_BUDGET_KIB * 1024
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        z.extractall(tmp_path)
    assert {n.split("/")[0] for n in names} == {"hindsight_isolation", "memory_adapter"}
    assert "memory_adapter/identity/verifier.py" in names
    assert "hindsight_isolation/tenant.py" in names
    import subprocess
    import sys

    probe = (
        "import hindsight_isolation.settings, memory_adapter.identity.bank_ids, memory_adapter.identity.verifier; "
        "print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); {probe}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_extension_zip_is_reproducible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "BUILD", tmp_path)
    monkeypatch.setattr(build, "EXTENSION_ZIP", tmp_path / "a.zip")
    build.build_extension()
    first = build.sha256(tmp_path / "a.zip")
    monkeypatch.setattr(build, "EXTENSION_ZIP", tmp_path / "b.zip")
    build.build_extension()
    assert build.sha256(tmp_path / "b.zip") == first


def test_provisioning_function_bundles_its_driver_and_imports() -> None:
    import subprocess
    import sys

    root = _require(build.PROVISIONING_DIR)
    assert (root / "index.py").read_bytes() == (build.PROVISIONING_SRC / "index.py").read_bytes()
    assert (root / "pg8000").is_dir()
    assert not list(root.rglob("*.so"))  # pure Python: any Lambda architecture
    assert build.tree_size(root) <= build.PROVISIONING_BUDGET_MIB * 2**20
    probe = "import index, pg8000.dbapi; print(index.OWNER_ROLE)"
    result = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(root)!r}); {probe}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.strip() == "hindsight_owner", result.stderr


def test_the_gateway_handlers_import_with_nothing_but_the_layer(tmp_path: Path) -> None:
    # GIVEN what Lambda gives the gateway's functions, their source folder and the layer, and no site-packages;
    # only the layer's compiled packages (arm64 builds, unloadable here) are swapped for this machine's own
    import importlib.util
    import subprocess
    import sys

    from infra.constructs.memory_gateway import INTERCEPTOR_HANDLER, SOURCE, TARGET_HANDLER

    layer = _require(build.LAYER_DIR / "python")
    native = tmp_path / "native"
    native.mkdir()
    for name in ("cryptography", "cffi", "_cffi_backend"):
        spec = importlib.util.find_spec(name)
        assert spec is not None
        assert spec.origin is not None
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        (native / source.name).symlink_to(source)
    modules = [handler.split(".")[0] for handler in (INTERCEPTOR_HANDLER, TARGET_HANDLER)]
    script = (
        f"import sys; sys.path[:0] = [{str(SOURCE)!r}, {str(native)!r}, {str(layer)!r}]; "
        + "; ".join(f"import {m}; assert callable({m}.handler)" for m in modules)
        + "; import memory_adapter; assert memory_adapter.__file__.startswith("
        + repr(str(layer))
        + ")"
    )
    # WHEN both handlers are imported THEN everything else they need comes from the layer
    result = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize(
    ("target", "source", "budget_mib", "handlers"),
    [
        (build.REPLAY_DIR, build.REPLAY_SRC, build.REPLAY_BUDGET_MIB, ("handler",)),
        (build.ADMIN_DIR, build.ADMIN_SRC, build.ADMIN_BUDGET_MIB, ("handler", "expire_handler", "backup_handler")),
    ],
    ids=["retain_replay", "memory_admin"],
)
def test_layer_functions_bundle_powertools_for_the_layers_python_and_import_with_the_layer(
    target: Path, source: Path, budget_mib: int, handlers: tuple[str, ...]
) -> None:
    import subprocess
    import sys

    root = _require(target)
    layer = _require(build.LAYER_DIR / "python")
    _assert_arm64_cp312(root)
    assert (root / "index.py").read_bytes() == (source / "index.py").read_bytes()
    assert (root / "aws_lambda_powertools").is_dir()
    assert not (root / "memory_adapter").exists()  # from the layer
    assert build.tree_size(root) <= budget_mib * 2**20
    # As Lambda lays it out: the function's code first, the layer's python/ after it.
    probe = f"import index; print(all(callable(getattr(index, h)) for h in {handlers!r}))"
    result = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path[:0] = [{str(root)!r}, {str(layer)!r}]; {probe}"],
        capture_output=True,
        text=True,
        check=False,
        env={"POWERTOOLS_METRICS_NAMESPACE": "Test", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    assert result.stdout.strip() == "True", result.stderr


EXAMPLE_PROJECT = build.ROOT / "examples" / "strands_agent"
#: Each example project, its integration module and the distributions its framework brings.
EXAMPLES = {
    "strands_agent": ("strands.py", {"strands_agents"}),
    "langgraph_agent": ("langgraph.py", {"langgraph", "langchain_core", "langchain_aws"}),
}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_project_bundle_is_arm64_with_its_entrypoint_and_the_wiring(example: str) -> None:
    integration, framework = EXAMPLES[example]
    root = _require(build.project_bundle_dir(build.ROOT / "examples" / example))  # make build AGENT=examples/<name>
    _assert_arm64_cp312(root)
    assert (root / DEFAULT_PROJECT_ENTRYPOINT).is_file()
    assert (root / "memory_adapter" / "agentcore" / "memory.py").is_file()
    assert (root / "memory_adapter" / "integrations" / integration).is_file()
    assert not (root / build.PROJECT_REQUIREMENTS).exists()
    dists = {path.name.split("-")[0].lower() for path in root.glob("*.dist-info")}
    assert {*framework, "bedrock_agentcore", "aws_lambda_powertools", "pyjwt", "boto3"} <= dists
    assert build.tree_size(root) <= build.PROJECT_BUDGET_MIB * 2**20


def test_a_project_that_cannot_be_bundled_is_refused_with_the_reason(tmp_path: Path) -> None:
    assert project_problems(EXAMPLE_PROJECT) == []
    assert "is not a folder" in project_problems(tmp_path / "missing")[0]
    assert "has no entrypoint 'agent.py'" in project_problems(tmp_path)[0]
    (tmp_path / "agent.py").write_text("")
    assert "inside the project" in project_problems(tmp_path, "../agent.py")[0]
    assert "inside the project" in project_problems(tmp_path, "agent.txt")[0]
    (tmp_path / "memory_adapter").mkdir()
    assert "must not contain a memory_adapter folder" in project_problems(tmp_path)[0]
    with pytest.raises(build.BuildError, match="memory_adapter folder"):
        build.build_project(tmp_path)
    assert build.main(["project"]) == 2


def test_the_wiring_dependencies_come_from_the_adapter_s_extra() -> None:
    wiring = build.adapter_dependencies(build.WIRING_EXTRA)
    assert wiring[: len(build.adapter_dependencies())] == build.adapter_dependencies()
    assert any(dep.startswith("bedrock-agentcore") for dep in wiring)
    with pytest.raises(build.BuildError, match="no extra"):
        build.adapter_dependencies("nope")


def test_make_build_says_each_step_before_it_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # WHEN one artifact is built as make build builds them (the extension: quick, no pip; into a temporary folder,
    # so the build/ other tests read is not rewritten under them)
    monkeypatch.setattr(build, "BUILD", tmp_path)
    monkeypatch.setattr(build, "EXTENSION_ZIP", tmp_path / "hindsight_ext.zip")
    assert build.main(["extension"]) == 0
    # THEN its step is announced before it runs, then its size (before: one line at the end of each, so a minute of
    # silence while pip fetched the agent's wheels)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[1/1] extension ..."
    assert out[1].startswith("[1/1] extension: ")
    assert out[1].endswith(" MiB")
