"""Loading a changed copy of the project's cdk.json (shared by the configuration tests)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from infra.config import AppConfig, load_config_from_cdk_json
from infra.config.loader import CDK_JSON


def load_config_from_cdk_json_with_section_key(section: str, key: str | None, value: object) -> AppConfig:
    """A cdk.json whose ``defaults.<section>`` holds an extra key (``key`` None: the section itself is ``value``)."""
    document = json.loads(CDK_JSON.read_text())
    if key is None:
        document["context"]["defaults"][section] = value
    else:
        document["context"]["defaults"][section][key] = value
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cdk.json"
        path.write_text(json.dumps(document))
        return load_config_from_cdk_json(path=path)
