"""What the deployment's settings are: :class:`AppConfig`, the top-level settings and one frozen dataclass per
``cdk.json`` section (each defined, with its rules, in the module of its name: ``infra.config.network``, ...).

The field names are the settings' names (``cdk.json`` keys and ``-c section.key=value``); their values come from
``cdk.json`` (``context.defaults``, then ``context.envs.<env>``), read by :mod:`infra.config.loader` and checked by
:mod:`infra.config.rules`. Stacks receive the section they need (``config=cfg.hindsight``), never the whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from infra.config.agent import AgentConfig
from infra.config.alarms import AlarmsConfig
from infra.config.auth import AuthConfig, AuthMode
from infra.config.database import DatabaseConfig
from infra.config.eks import EksConfig
from infra.config.events import EventsConfig
from infra.config.fading import FadingConfig
from infra.config.gateway import GatewayConfig
from infra.config.hindsight import HindsightConfig
from infra.config.layer import LayerConfig
from infra.config.missions import MissionsConfig
from infra.config.network import NetworkConfig
from infra.config.operations import OperationsConfig
from infra.config.retain_queue import RetainQueueConfig
from infra.config.retention import RetentionConfig


class DataRemoval(StrEnum):
    """What happens to stateful data when its stack or resource is deleted."""

    RETAIN = "retain"
    SNAPSHOT = "snapshot"
    DESTROY = "destroy"


@dataclass(frozen=True)
class AppConfig:
    """Everything a deployment needs; built only by :func:`~infra.config.loader.load_config`.

    ``env_name`` is ``-c env=<name>``; the other plain fields are ``cdk.json``'s top-level settings, the dataclass
    fields its sections.
    """

    env_name: str
    prefix: str
    account: str | None
    region: str
    removal: DataRemoval
    tags: Mapping[str, str]
    network: NetworkConfig
    auth: AuthConfig
    agent: AgentConfig
    layer: LayerConfig
    retain_queue: RetainQueueConfig
    hindsight: HindsightConfig
    database: DatabaseConfig
    gateway: GatewayConfig
    alarms: AlarmsConfig
    retention: RetentionConfig
    missions: MissionsConfig
    fading: FadingConfig
    operations: OperationsConfig
    eks: EksConfig
    events: EventsConfig

    @property
    def gateway_enabled(self) -> bool:
        """Whether the deployment has the memory gateway (see :class:`GatewayConfig`)."""
        if self.gateway.enabled is None:
            return self.auth.mode is not AuthMode.IAM
        return self.gateway.enabled

    @property
    def stack_prefix(self) -> str:
        """Stack names start with this, e.g. ``HindsightMemory-dev``."""
        return f"{self.prefix}-{self.env_name}"

    @property
    def parameter_prefix(self) -> str:
        """SSM parameter names of the deployment start with this, e.g. ``/HindsightMemory/dev``."""
        return f"/{self.prefix}/{self.env_name}"
