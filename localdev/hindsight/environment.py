"""The environment ``hindsight-api`` runs with: every ``HINDSIGHT_API_*`` setting of the local server, in one place.

:func:`server_env` is the whole story; the helpers below it only pick the LLM, embeddings and isolation variables
for the configured modes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hindsight_isolation.settings import ENV_LLM_TRACE_ENABLED
from hindsight_isolation.settings import server_env as isolation_env
from localdev.hindsight.config import (
    DEFAULT_BEDROCK_MODEL,
    DEFAULT_OPENAI_MODEL,
    EmbeddingsMode,
    LLMMode,
    LocalHindsightConfig,
)
from localdev.hindsight.errors import HindsightStartError
from localdev.hindsight.keys import ServerKeys
from localdev.hindsight.projected_model import projected_model_dir
from localdev.hindsight.venv import HindsightVenv
from localdev.supervisor import repo_pythonpath
from localdev.token_issuer import LOCAL_CLIENT_ID, running_issuer_url
from memory_adapter.constants import RECALL_SERVER_SETTINGS, RETAIN_SERVER_SETTINGS
from memory_adapter.identity.settings import discovery_url_for
from memory_adapter.missions import Missions

__all__ = ["Endpoints", "server_env", "worker_env", "worker_id"]


@dataclass(frozen=True, kw_only=True)
class Endpoints:
    """Where the server listens and what it talks to, once the ports are chosen."""

    port: int
    database_url: str
    llm_port: int  # the stand-in's port (0 when it does not run)


def server_env(config: LocalHindsightConfig, endpoints: Endpoints, keys: ServerKeys) -> dict[str, str]:
    """The environment ``hindsight-api`` runs with (inherited ``HINDSIGHT_API_*`` are dropped)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_API_")}
    env.update(
        {
            "HINDSIGHT_API_HOST": config.host,
            "HINDSIGHT_API_PORT": str(endpoints.port),
            "HINDSIGHT_API_DATABASE_URL": endpoints.database_url,
            "HINDSIGHT_API_WORKER_ID": "local",
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
            **RECALL_SERVER_SETTINGS,  # as deployed: what make eval measured best
            **RETAIN_SERVER_SETTINGS,  # as deployed: retains queue, never refused for load
            "HINDSIGHT_API_LOG_LEVEL": "info",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1",
            "NO_COLOR": "1",
        }
    )
    env.update(_llm_env(config, endpoints.llm_port))
    env.update(_embeddings_env(config, endpoints.llm_port))
    observations = config.observations
    if observations is None:
        observations = config.llm is not LLMMode.STUB
    env["HINDSIGHT_API_ENABLE_OBSERVATIONS"] = "true" if observations else "false"
    env[ENV_LLM_TRACE_ENABLED] = "false"  # a forgotten bank must leave no prompts behind (also with isolation off)
    if config.workers:  # as deployed: the API serves requests only, the worker processes do the queued work
        env["HINDSIGHT_API_WORKER_ENABLED"] = "false"
    if config.isolation:
        env.update(_isolation_env(config, keys))
    elif keys.operator_key:
        env["HINDSIGHT_API_TENANT_EXTENSION"] = "hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension"
        env["HINDSIGHT_API_TENANT_API_KEY"] = keys.operator_key
    env.update(config.extra_env)
    return env


def worker_id(index: int) -> str:
    """The stable id of worker ``index`` (from 1): ``local`` for the first, as the in-process worker was called, so
    work it had claimed before a restart is reclaimed (Hindsight reclaims only under the same id)."""
    return "local" if index == 1 else f"local-{index}"


def worker_env(server: dict[str, str], index: int, http_port: int) -> dict[str, str]:
    """The environment of ``hindsight-worker`` number ``index``: the API's (``server``), running the queue worker
    under its own stable id, with its health endpoint on ``http_port``."""
    return {
        **server,
        "HINDSIGHT_API_WORKER_ENABLED": "true",
        "HINDSIGHT_API_WORKER_ID": worker_id(index),
        "HINDSIGHT_API_WORKER_HTTP_PORT": str(http_port),
    }


def _isolation_env(config: LocalHindsightConfig, keys: ServerKeys) -> dict[str, str]:
    """Load hindsight_isolation (from this repository) into the server, trusting the local token issuer."""
    # The issuer start() brought up (or found running), on whatever port it serves: not the default port.
    discovery = config.issuer_discovery_url or discovery_url_for(running_issuer_url())
    env = isolation_env(
        discovery_url=discovery,
        allowed_clients=(LOCAL_CLIENT_ID,),
        tenant_claim=config.jwt_tenant_claim,
        operator_key=keys.operator_key,
        agent_key=keys.agent_key,
        agent_name=keys.agent_name,
        agent_tenant=keys.agent_tenant,
        missions=Missions.from_json(config.missions),
    )
    env["PYTHONPATH"] = repo_pythonpath(adapter=True)
    return env


def _llm_env(config: LocalHindsightConfig, llm_port: int) -> dict[str, str]:
    mode = config.llm
    if mode is LLMMode.STUB:
        return {
            "HINDSIGHT_API_LLM_PROVIDER": "openai",
            "HINDSIGHT_API_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
            "HINDSIGHT_API_LLM_API_KEY": "local-stub",
            "HINDSIGHT_API_LLM_MODEL": config.llm_model or "stub",
            "HINDSIGHT_API_LLM_MAX_RETRIES": "1",
        }
    if mode is LLMMode.OPENAI:
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise HindsightStartError("--llm openai needs OPENAI_API_KEY in the environment")
        env = {
            "HINDSIGHT_API_LLM_PROVIDER": "openai",
            "HINDSIGHT_API_LLM_API_KEY": key,
            "HINDSIGHT_API_LLM_MODEL": config.llm_model or DEFAULT_OPENAI_MODEL,
        }
        if os.environ.get("OPENAI_BASE_URL"):
            env["HINDSIGHT_API_LLM_BASE_URL"] = os.environ["OPENAI_BASE_URL"]
        return env
    return {
        "HINDSIGHT_API_LLM_PROVIDER": "bedrock",
        "HINDSIGHT_API_LLM_MODEL": config.llm_model or DEFAULT_BEDROCK_MODEL,
        "HINDSIGHT_API_LLM_STRUCTURED_OUTPUT_FORCED_TOOL": "true",
        "HINDSIGHT_API_LLM_SUPPORTS_MAX_ITEMS": "false",
    }


def _embeddings_env(config: LocalHindsightConfig, llm_port: int) -> dict[str, str]:
    if config.embeddings is EmbeddingsMode.HASHED:
        return {
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "local-stub",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": "hashed-384",
        }
    venv = HindsightVenv(config.venv)
    model = projected_model_dir(venv) if config.embeddings is EmbeddingsMode.PROJECTED else venv.embedding_model_dir()
    return {
        "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "local",
        "HINDSIGHT_API_EMBEDDINGS_LOCAL_MODEL": str(model),
        "HINDSIGHT_API_EMBEDDINGS_LOCAL_FORCE_CPU": "true",
    }
