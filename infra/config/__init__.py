"""Typed deployment configuration, read once from CDK context and validated before any resource exists.

- :mod:`infra.config.model`: the settings (one frozen dataclass per ``cdk.json`` section; the field names are the
  setting names).
- :mod:`infra.config.loader`: reading ``cdk.json`` and ``-c`` overrides through the shared settings reader.
- :mod:`infra.config.rules`: what makes a configuration deployable (the JWT rules are the identity contract's).

``load_config`` collects every problem and raises one :class:`ConfigError` listing all of them, so a user fixes a
bad configuration in one round. ``python -m infra.config [-c key=value ...]`` checks a configuration without AWS.
"""

from infra.config.loader import (
    PROJECT_ROOT,
    ConfigError,
    ContextSource,
    DictContext,
    context_from_cdk_json,
    load_config,
    load_config_from_cdk_json,
)
from infra.config.model import (
    ENDPOINT_NAMES,
    LOG_RETENTION_DAYS,
    OPTIONAL_ENDPOINTS,
    AgentConfig,
    AlarmsConfig,
    AppConfig,
    AuthConfig,
    AuthMode,
    DatabaseConfig,
    DatabaseEngine,
    DataRemoval,
    EksConfig,
    EventsConfig,
    GatewayConfig,
    HindsightConfig,
    HindsightMode,
    ImageSource,
    LayerConfig,
    LlmProvider,
    NetworkConfig,
    OperationsConfig,
    Platform,
    ProbeFailure,
    RetainQueueConfig,
    RetentionConfig,
    VpcMode,
)

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
    "GatewayConfig",
    "HindsightConfig",
    "HindsightMode",
    "ImageSource",
    "LayerConfig",
    "LlmProvider",
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
