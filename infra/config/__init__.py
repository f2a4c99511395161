"""Typed deployment configuration, read once from CDK context and validated before any resource exists.

- one module per ``cdk.json`` section (:mod:`infra.config.network`, :mod:`infra.config.hindsight`, ...): its frozen
  dataclass (the field names are the setting names) and its rules, each problem named after its setting;
  :mod:`infra.config.external` holds the rules of ``hindsight.mode=external``, :mod:`infra.config.checks` the checks
  the rules share.
- :mod:`infra.config.model`: :class:`AppConfig`, the top-level settings and the sections together.
- :mod:`infra.config.loader`: reading ``cdk.json`` and ``-c`` overrides through the shared settings reader.
- :mod:`infra.config.rules`: running every section's rules, and the rules that span sections.

``load_config`` collects every problem and raises one :class:`ConfigError` listing all of them, so a user fixes a
bad configuration in one round. ``python -m infra.config [-c key=value ...]`` checks a configuration without AWS.
"""

from infra.config.agent import AgentConfig
from infra.config.alarms import AlarmsConfig
from infra.config.auth import AuthConfig, AuthMode
from infra.config.checks import LOG_RETENTION_DAYS
from infra.config.database import DatabaseConfig, DatabaseEngine
from infra.config.eks import EksConfig
from infra.config.events import EventsConfig
from infra.config.fading import FadingConfig
from infra.config.gateway import GatewayConfig
from infra.config.hindsight import HindsightConfig, HindsightMode, ImageSource, LlmProvider, Platform, ProbeFailure
from infra.config.layer import LayerConfig
from infra.config.loader import (
    PROJECT_ROOT,
    ConfigError,
    ContextSource,
    DictContext,
    context_from_cdk_json,
    load_config,
    load_config_from_cdk_json,
)
from infra.config.missions import MissionsConfig
from infra.config.model import AppConfig, DataRemoval
from infra.config.network import ENDPOINT_NAMES, OPTIONAL_ENDPOINTS, NetworkConfig, VpcMode
from infra.config.operations import OperationsConfig
from infra.config.retain_queue import RetainQueueConfig
from infra.config.retention import RetentionConfig

__all__ = [
    "ENDPOINT_NAMES",
    "LOG_RETENTION_DAYS",
    "OPTIONAL_ENDPOINTS",
    "PROJECT_ROOT",
    "AgentConfig",
    "AlarmsConfig",
    "AppConfig",
    "AuthConfig",
    "AuthMode",
    "ConfigError",
    "ContextSource",
    "DataRemoval",
    "DatabaseConfig",
    "DatabaseEngine",
    "DictContext",
    "EksConfig",
    "EventsConfig",
    "FadingConfig",
    "GatewayConfig",
    "HindsightConfig",
    "HindsightMode",
    "ImageSource",
    "LayerConfig",
    "LlmProvider",
    "MissionsConfig",
    "NetworkConfig",
    "OperationsConfig",
    "Platform",
    "ProbeFailure",
    "RetainQueueConfig",
    "RetentionConfig",
    "VpcMode",
    "context_from_cdk_json",
    "load_config",
    "load_config_from_cdk_json",
]
