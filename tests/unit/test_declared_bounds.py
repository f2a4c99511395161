"""Each bound or choice a setting declares in its field is enforced where its process reads it: a value outside is
refused with an error naming the variable the process reads and the allowed range or values. The cases come from the
declarations, so a field added with bounds or choices is covered without a line here."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from hindsight_isolation.settings import ENV_TENANT_PREFIX, IsolationSettings
from infra.functions.isolation_probe.index import ProbeSettings
from memory_adapter.config import HindsightAgentCoreConfig, resolve_settings
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.identity.settings import ENV_NAMING, JwtSettings
from memory_adapter.settings_fields import RecallClientSettings, Setting, declared
from memory_adapter.settings_reader import Naming
from runtime_handler.settings import Settings

#: Each settings class with bounded fields: how its process reads an environment (raising on any problem), the
#: environment that is valid without the field under test, and how the keys are spelled.
READERS: dict[type, tuple[Callable[[Mapping[str, str]], object], dict[str, str], Naming]] = {
    HindsightAgentCoreConfig: (
        lambda env: resolve_settings({}, environ=env, config=None),
        {"HINDSIGHT_API_URL": "http://h"},
        Naming(),
    ),
    JwtSettings: (
        lambda env: JwtSettings.from_mapping(env, ENV_NAMING),
        {"JWT_DISCOVERY_URL": "https://i.example.com/.well-known/openid-configuration", "JWT_ALLOWED_CLIENTS": "app"},
        ENV_NAMING,
    ),
    IsolationSettings: (
        IsolationSettings.from_config,
        {"operator_key": "o" * 40, "fading": "true"},
        Naming(),
    ),
    Settings: (
        Settings.from_env,
        {"AGENT_NAME": "a", "AUTH_MODE": "iam", "HINDSIGHT_API_URL": "http://h", "MODEL_PROVIDER": "echo"},
        Naming(),
    ),
    RecallClientSettings: (RecallClientSettings.from_env, {"HINDSIGHT_API_URL": "http://h"}, Naming()),
    ProbeSettings: (
        ProbeSettings.from_env,
        {"HINDSIGHT_API_URL": "http://h", "OPERATOR_KEY_SECRET_ARN": "arn:o", "AGENT_NAME": "a"},
        Naming(),
    ),
}
CASES = [
    pytest.param(cls, field.name, setting, isinstance(field.default, int), id=f"{cls.__name__}.{field.name}")
    for cls in READERS
    for field, setting in declared(cls)
    if setting.bounded
]
CHOICES = [
    pytest.param(cls, field.name, setting, id=f"{cls.__name__}.{field.name}")
    for cls in READERS
    for field, setting in declared(cls)
    if setting.choices is not None
]


def _outside(setting: Setting, integer: bool) -> float:
    """A value just outside the bounds."""
    step = 1 if integer else 0.5
    if setting.high is not None:
        return setting.high + step
    if setting.above is not None:
        return setting.above
    assert setting.low is not None
    return setting.low - step


def _allowed(setting: Setting) -> str:
    if setting.low is not None and setting.high is not None:
        return f"between {setting.low:g} and {setting.high:g}"
    if setting.above is not None:
        return f"greater than {setting.above:g}"
    return f"at least {setting.low:g}"


def test_every_process_settings_class_declares_its_bounds_and_choices_in_its_fields() -> None:
    checked = {cls for cls, *_ in (case.values for case in [*CASES, *CHOICES])}
    assert checked == set(READERS)
    assert {"HindsightAgentCoreConfig.recall_budget", "RecallClientSettings.recall_budget"} <= {c.id for c in CHOICES}


@pytest.mark.parametrize(("cls", "name", "setting", "integer"), CASES)
def test_a_value_outside_a_declared_bound_is_refused_naming_the_variable_and_the_range(
    cls: type, name: str, setting: Setting, integer: bool
) -> None:
    read, valid, naming = READERS[cls]
    read(valid)  # the base environment is valid
    variable = setting.key(name, naming)
    with pytest.raises((ValueError, ConfigurationError)) as refused:
        read({**valid, variable: str(_outside(setting, integer))})
    shown = ENV_TENANT_PREFIX + variable.upper() if cls is IsolationSettings else variable
    assert f"{shown} must be {_allowed(setting)}" in str(refused.value)


@pytest.mark.parametrize(("cls", "name", "setting"), CHOICES)
def test_a_value_outside_the_declared_choices_is_refused_naming_the_variable_and_the_values(
    cls: type, name: str, setting: Setting
) -> None:
    read, valid, naming = READERS[cls]
    variable = setting.key(name, naming)
    assert setting.choices is not None
    for allowed in setting.choices:
        read({**valid, variable: allowed})
    with pytest.raises((ValueError, ConfigurationError)) as refused:
        read({**valid, variable: "none-of-them"})
    shown = ENV_TENANT_PREFIX + variable.upper() if cls is IsolationSettings else variable
    assert f"{shown} must be one of: {', '.join(setting.choices)}; got 'none-of-them'" in str(refused.value)
