"""What makes a configuration deployable: the rules of every section, and those that span sections.

Each section's rules are in the module of its name (``infra.config.network``: ``network_problems``, ...) and return
the problems of that part (empty when it is fine), each named after its setting; :func:`problems` runs them all,
skipping a part that could not be read at all, so one run lists everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from infra.config.agent import agent_problems
from infra.config.alarms import alarms_problems
from infra.config.auth import auth_problems
from infra.config.checks import require
from infra.config.database import database_problems
from infra.config.eks import eks_problems
from infra.config.events import events_problems
from infra.config.external import external_problems
from infra.config.gateway import agent_gateway_problems, gateway_problems
from infra.config.hindsight import hindsight_problems
from infra.config.layer import layer_problems
from infra.config.network import network_problems
from infra.config.operations import operations_problems
from infra.config.retain_queue import retain_queue_problems

_ENV_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_PREFIX = re.compile(r"^[A-Z][A-Za-z0-9]{0,23}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_ACCOUNT = re.compile(r"^\d{12}$")


def problems(env_name: str, top: Mapping[str, Any] | None, sections: Mapping[str, Any]) -> list[str]:
    """The problems of every part that was read (None marks a part that could not be read)."""
    errors: list[str] = []
    require(
        errors, bool(_ENV_NAME.match(env_name)), f"env '{env_name}' must be lowercase letters and digits, at most 12"
    )
    region = top.get("region") if top is not None else None
    auth = sections.get("auth")
    if top is not None:
        errors.extend(top_level_problems(top))
    part_rules: dict[str, Any] = {
        "network": lambda n: network_problems(n, region),
        "auth": auth_problems,
        "agent": agent_problems,
        "layer": layer_problems,
        "retain_queue": retain_queue_problems,
        "hindsight": lambda h: external_problems(h, auth, region) if h.external else hindsight_problems(h),
        "database": database_problems,
        "gateway": lambda g: gateway_problems(g, auth.mode if auth is not None else None),
        "alarms": alarms_problems,
        "operations": operations_problems,
        "events": events_problems,
    }
    for name, rule in part_rules.items():
        if sections.get(name) is not None:
            errors.extend(rule(sections[name]))
    if sections.get("agent") is not None and sections.get("missions") is not None:
        agent_name = sections["agent"].name
        errors.extend(
            f"missions.{name} names no agent of this deployment (agent.name is {agent_name!r}): fix its spelling"
            for name in sorted(sections["missions"].missions.by_agent)
            if name != agent_name
        )
    if sections.get("agent") is not None and sections.get("gateway") is not None:
        errors.extend(
            agent_gateway_problems(sections["agent"], sections["gateway"], auth.mode if auth is not None else None)
        )
    hindsight, network = sections.get("hindsight"), sections.get("network")
    events = sections.get("events")
    require(
        errors,
        not (hindsight is not None and hindsight.external and events is not None and events.enabled),
        "events.enabled needs hindsight.mode=managed: memory events come from the isolation extension in the "
        "Hindsight this stack runs (see docs/events.md); unset one of them",
    )
    fading = sections.get("fading")
    require(
        errors,
        not (hindsight is not None and hindsight.external and fading is not None and fading.enabled),
        "fading.enabled needs hindsight.mode=managed: fading runs in the isolation extension of the Hindsight this "
        "stack runs; configure it on your own server (docs/operating.md#fading-and-reinforcement) and unset it here",
    )
    if network is not None and hindsight is not None and not network.optional_endpoints:
        require(
            errors,
            not hindsight.external,
            "network.optional_endpoints=false applies to hindsight.mode=managed only: the external-mode probe "
            "publishes its result to CloudWatch's API (the Monitoring endpoint)",
        )
    if sections.get("eks") is not None and hindsight is not None:
        errors.extend(eks_problems(sections["eks"], hindsight, network.mode if network is not None else None))
    return errors


def top_level_problems(top: Mapping[str, Any]) -> list[str]:
    """``prefix``, ``account``, ``region`` and ``tags``."""
    errors: list[str] = []
    prefix, account, region, tags = top["prefix"], top["account"], top["region"], top["tags"]
    if prefix is not None:
        require(errors, bool(_PREFIX.match(prefix)), "prefix must be PascalCase letters and digits, at most 24")
    require(errors, account is None or bool(_ACCOUNT.match(account)), "account must be 12 digits (or null)")
    if region is not None:
        require(errors, bool(_REGION.match(region)), "region must be an AWS region like us-east-1")
    for key, value in (tags or {}).items():
        require(errors, 0 < len(key) <= 128 and not key.startswith("aws:"), f"tags: '{key}' is not a usable tag key")
        require(errors, len(value) <= 256, f"tags: the value of '{key}' must be at most 256 characters")
    return errors
