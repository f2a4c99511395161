"""The ``agent`` section: the AgentCore Runtime agent (the reference agent or an agent project you bring) and its
memory adapter's recall settings, checked by the adapter's own rules."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.agent_code import AgentCode, agent_code, agent_code_problems
from infra.config.checks import bounded, log_retention, require
from memory_adapter.agentcore.project import DEFAULT_PROJECT_ENTRYPOINT
from memory_adapter.config import SETTING_NAMES, read_settings
from memory_adapter.settings_fields import RecallClientSettings
from memory_adapter.settings_reader import SettingsReader


@dataclass(frozen=True)
class AgentConfig:
    """The AgentCore Runtime agent: the reference agent (``bundle_path``), or an agent project you bring
    (``project``, with its ``entrypoint``; see :mod:`infra.agent_code`)."""

    name: str
    model_id: str
    bundle_path: Path
    allow_anonymous: bool
    idle_timeout_seconds: int
    max_lifetime_seconds: int
    log_retention_days: int
    tools_via_gateway: bool
    project: Path | None = None
    entrypoint: str = DEFAULT_PROJECT_ENTRYPOINT
    #: The memory adapter's recall settings (``null``: the adapter's default, declared once in
    #: ``memory_adapter.config.HindsightAgentCoreConfig``): search depth, size of the recalled block, candidates the
    #: adapter re-ranks, deadline.
    recall_budget: str | None = None
    recall_max_tokens: int | None = None
    recall_candidate_tokens: int | None = None
    recall_timeout_seconds: float | None = None

    @property
    def memory_settings(self) -> dict[str, Any]:
        """The recall settings given, as ``HindsightAgentCoreConfig`` fields (what the agent's ``to_env`` writes)."""
        given = {name: getattr(self, key) for name, key in _MEMORY_KEYS.items()}
        return {name: value for name, value in given.items() if value is not None}

    @property
    def recall_settings(self) -> dict[str, Any]:
        """The recall budget, block size and candidate tokens given, as ``RecallClientSettings`` fields: the memory
        tools and the operator's recall use the agent's."""
        return {name: value for name, value in self.memory_settings.items() if name in _RECALL_CLIENT_FIELDS}

    @property
    def code(self) -> AgentCode:
        """The folder the runtime deploys and the file AgentCore runs from its root."""
        return agent_code(bundle_path=self.bundle_path, project=self.project, entrypoint=self.entrypoint)


#: What a recalling client (the memory tools, the operator's recall) shares with the agent's adapter.
_RECALL_CLIENT_FIELDS = frozenset(f.name for f in dataclasses.fields(RecallClientSettings))
_AGENT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


def agent_problems(a: AgentConfig) -> list[str]:
    """The AgentCore Runtime agent."""
    errors: list[str] = []
    require(errors, bool(_AGENT_NAME.match(a.name)), "agent.name must be lowercase letters, digits and '-', at most 31")
    require(errors, 0 < len(a.model_id) <= 200 and " " not in a.model_id, "agent.model_id must be a Bedrock model id")
    bounded(errors, "agent.idle_timeout_seconds", a.idle_timeout_seconds, low=60, high=28800)
    require(
        errors,
        a.idle_timeout_seconds <= a.max_lifetime_seconds <= 28800,
        "agent.max_lifetime_seconds must be between agent.idle_timeout_seconds and 28800",
    )
    log_retention(errors, "agent.log_retention_days", a.log_retention_days)
    errors.extend(agent_code_problems(project=a.project, entrypoint=a.entrypoint))
    errors.extend(_memory_setting_problems(a))
    return errors


#: cdk.json ``agent`` key of each memory adapter setting it may give: every field of :class:`AgentConfig` named as a
#: ``HindsightAgentCoreConfig`` setting (seconds spelled out), so giving the agent one more is one field here.
_MEMORY_KEYS: Mapping[str, str] = {
    f.name.removesuffix("_seconds"): f.name
    for f in dataclasses.fields(AgentConfig)
    if f.name.removesuffix("_seconds") in SETTING_NAMES
}


def _memory_setting_problems(a: AgentConfig) -> list[str]:
    """The memory adapter's own checks of the recall settings the agent is given (its rules, named as in cdk.json)."""
    reader = SettingsReader({})
    read_settings(reader, a.memory_settings, require_url=False)
    named: list[str] = []
    for problem in reader.problems:
        field_name = next((f for f in _MEMORY_KEYS if problem.startswith(f"{f} ")), None)
        named.append(f"agent.{_MEMORY_KEYS[field_name]}{problem[len(field_name) :]}" if field_name else problem)
    return named
