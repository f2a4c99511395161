"""Which code the runtime deploys: the reference agent's bundle by default, an agent project's when configured."""

from __future__ import annotations

from pathlib import Path

from infra import build
from infra.agent_code import REFERENCE_ENTRYPOINT, agent_code, agent_code_problems

EXAMPLE = build.ROOT / "examples" / "strands_agent"


def test_the_default_is_the_reference_agent_s_bundle() -> None:
    code = agent_code(bundle_path=Path("build/agent"), project=None)
    assert (code.path, code.entrypoint, code.project) == (Path("build/agent"), REFERENCE_ENTRYPOINT, None)


def test_a_project_deploys_its_own_bundle_and_entrypoint() -> None:
    code = agent_code(bundle_path=Path("build/agent"), project=EXAMPLE)
    assert code.path == build.project_bundle_dir(EXAMPLE) == build.BUILD / "projects" / "strands_agent"
    assert code.entrypoint == ("agent.py",)
    assert agent_code(bundle_path=Path("x"), project=EXAMPLE, entrypoint="serve.py").entrypoint == ("serve.py",)


def test_an_unbuilt_bundle_says_how_to_build_it(tmp_path: Path) -> None:
    code = agent_code(bundle_path=tmp_path / "none", project=None)
    assert "run make build" in (code.missing() or "")
    project = agent_code(bundle_path=tmp_path, project=tmp_path / "my_agent")
    assert f"make build AGENT={tmp_path / 'my_agent'}" in (project.missing() or "")
    (tmp_path / "built").mkdir()
    (tmp_path / "built" / "main.py").write_text("")
    assert agent_code(bundle_path=tmp_path / "built", project=None).missing() is None


def test_a_bad_project_is_a_configuration_problem(tmp_path: Path) -> None:
    assert agent_code_problems(project=None) == []
    assert agent_code_problems(project=EXAMPLE) == []
    [problem] = agent_code_problems(project=tmp_path / "missing")
    assert problem.startswith("agent.project: ")
    assert "is not a folder" in problem
    assert "has no entrypoint 'serve.py'" in agent_code_problems(project=EXAMPLE, entrypoint="serve.py")[0]
