"""What the security tests (``test_security*.py``) share: the variants they cover, how they compare template
fragments as text, and a task's containers."""

from __future__ import annotations

import json
from typing import Any

from tests.infra.conftest import VARIANTS, resources

ALL = list(VARIANTS)


def as_text(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)


def task_containers(template: dict[str, Any], task_prefix: str) -> dict[str, dict[str, Any]]:
    (task,) = [v for k, v in resources(template, "AWS::ECS::TaskDefinition").items() if k.startswith(task_prefix)]
    assert task["Properties"]["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    return {c["Name"]: c for c in task["Properties"]["ContainerDefinitions"]}
