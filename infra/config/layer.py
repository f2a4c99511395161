"""The ``layer`` section: the memory-adapter Lambda layer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from infra.config.checks import require


@dataclass(frozen=True)
class LayerConfig:
    """The memory-adapter Lambda layer."""

    path: Path
    parameter_name: str | None


_SSM_NAME = re.compile(r"^/[A-Za-z0-9_./-]{1,1000}$")


def layer_problems(layer: LayerConfig) -> list[str]:
    """The memory-adapter layer."""
    errors: list[str] = []
    require(
        errors,
        layer.parameter_name is None or bool(_SSM_NAME.match(layer.parameter_name)),
        "layer.parameter_name must be an SSM parameter path like /a/b (or null for the default)",
    )
    return errors
