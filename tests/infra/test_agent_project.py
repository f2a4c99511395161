"""Deploy your own agent: ``-c agent.project=examples/strands_agent`` makes the runtime's code asset the example's
bundle (``make build AGENT=examples/strands_agent``) with its entrypoint; nothing else about the runtime changes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra import build
from infra.config import ConfigError
from infra.constructs.props import PropsError
from tests.infra.conftest import ROOT, Synth, resources, synthesize

EXAMPLE = ROOT / "examples" / "strands_agent"
RUNTIME = "AWS::BedrockAgentCore::Runtime"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    if not (build.project_bundle_dir(EXAMPLE) / "agent.py").is_file():
        pytest.skip("the example's bundle is not built (make build AGENT=examples/strands_agent; make test does)")
    return synthesize(tmp_path_factory.mktemp("cdk-project"), {"agent.project": "examples/strands_agent"})


def _runtime(synth: Synth) -> dict[str, Any]:
    (runtime,) = resources(synth.template("-Agent"), RUNTIME).values()
    props: dict[str, Any] = runtime["Properties"]
    return props


def _staged_asset(synth: Synth) -> Path:
    """The folder CDK staged as the runtime's code asset (its S3 key is ``<asset hash>.zip``)."""
    code = _runtime(synth)["AgentRuntimeArtifact"]["CodeConfiguration"]["Code"]["S3"]
    prefix = code["Prefix"] if isinstance(code["Prefix"], str) else json.dumps(code["Prefix"])
    asset_hash = prefix.removesuffix(".zip")
    staged = synth.outdir / f"asset.{asset_hash}"
    assert staged.is_dir(), f"no staged asset {staged.name}"
    return staged


def test_the_runtime_runs_the_example_s_bundle_and_entrypoint(project: Synth) -> None:
    code = _runtime(project)["AgentRuntimeArtifact"]["CodeConfiguration"]
    assert code["EntryPoint"] == ["agent.py"]
    assert code["Runtime"] == "PYTHON_3_12"
    staged = _staged_asset(project)
    assert (staged / "agent.py").read_bytes() == (EXAMPLE / "agent.py").read_bytes()
    assert (staged / "memory_adapter" / "agentcore" / "memory.py").is_file()  # the wiring, not a copy of it
    assert (staged / "memory_adapter" / "integrations" / "strands.py").is_file()
    assert not (staged / "runtime_handler").exists()
    assert any(p.name.startswith("strands_agents-") for p in staged.glob("*.dist-info"))


def test_everything_but_the_code_is_the_reference_agent_s(project: Synth, default: Synth) -> None:
    mine, reference = _runtime(project), _runtime(default)
    assert reference["AgentRuntimeArtifact"]["CodeConfiguration"]["EntryPoint"] == ["main.py"]
    for key in (
        "EnvironmentVariables",
        "AuthorizerConfiguration",
        "NetworkConfiguration",
        "RequestHeaderConfiguration",
    ):
        assert json.dumps(mine.get(key), sort_keys=True) == json.dumps(reference.get(key), sort_keys=True), key
    assert project.nag_error is None


def test_a_project_that_cannot_be_deployed_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agent\.project: the agent project .* is not a folder"):
        synthesize(tmp_path / "a", {"agent.project": str(tmp_path / "missing")}, nag=False)
    unbuilt = tmp_path / "unbuilt_agent"
    unbuilt.mkdir()
    (unbuilt / "agent.py").write_text("")
    with pytest.raises(PropsError, match=rf"is not built .*run make build AGENT={re.escape(str(unbuilt))}"):
        synthesize(tmp_path / "b", {"agent.project": str(unbuilt)}, nag=False)
