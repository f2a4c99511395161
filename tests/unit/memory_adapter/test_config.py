"""Configuration: precedence argument > configure() > environment > default, no SaaS fallback, clear errors."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from memory_adapter import HindsightRuntimeAdapter
from memory_adapter.config import (
    ENV_VARS,
    HindsightAgentCoreConfig,
    configure,
    get_config,
    reset_config,
    resolve_settings,
)
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.settings_fields import read_declared, setting
from memory_adapter.settings_reader import SettingsReader


def test_no_url_anywhere_raises_a_clear_error():
    with pytest.raises(ConfigurationError, match="no Hindsight URL configured"):
        HindsightRuntimeAdapter(agent_name="a")


def test_configure_without_url_does_not_fall_back_to_saas():
    config = configure()
    assert config.hindsight_api_url == ""
    with pytest.raises(ConfigurationError):
        HindsightRuntimeAdapter()


def test_env_url_and_key_are_honoured_without_configure(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_API_URL", "http://env-host:8888/")
    monkeypatch.setenv("HINDSIGHT_API_TOKEN", "token-from-env")
    adapter = HindsightRuntimeAdapter()
    assert adapter.settings.hindsight_api_url == "http://env-host:8888"
    assert adapter.settings.api_key == "token-from-env"


def test_api_key_env_wins_over_api_token_env(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_API_KEY", "key")
    monkeypatch.setenv("HINDSIGHT_API_TOKEN", "token")
    assert configure(hindsight_api_url="http://h").api_key == "key"


def test_the_prior_art_key_variable_is_read_by_its_api_only():
    from memory_adapter.agentcore.settings import AgentMemorySettings
    from memory_adapter.compat import HINDSIGHT_API_TOKEN_ENV
    from memory_adapter.identity.settings import ENV_NAMING, JwtSettings
    from memory_adapter.settings_fields import env_names

    env = {"HINDSIGHT_API_URL": "http://h", HINDSIGHT_API_TOKEN_ENV: "token"}
    # GIVEN the prior art's second key variable: configure() and an adapter read it, as 0.1.3's configure() did
    assert resolve_settings({}, environ=env, config=None).api_key == "token"
    # BUT an agent's settings, which the stack writes itself, neither read nor list it
    agent = AgentMemorySettings.from_env({**env, "AGENT_NAME": "a", "AUTH_MODE": "iam"})
    assert agent.hindsight_api_key is None
    assert HINDSIGHT_API_TOKEN_ENV not in AgentMemorySettings.env_names()
    # AND the variables an agent reads are its fields', the adapter's and the token checks', each once
    names = AgentMemorySettings.env_names()
    assert set(names) == {
        *env_names(AgentMemorySettings),
        *env_names(HindsightAgentCoreConfig),
        *env_names(JwtSettings, ENV_NAMING),
    }
    assert len(names) == len(set(names))


def test_precedence_argument_over_configure_over_env(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_API_URL", "http://env")
    monkeypatch.setenv("HINDSIGHT_ADAPTER_RECALL_TIMEOUT", "1.5")
    monkeypatch.setenv("HINDSIGHT_ADAPTER_MAX_RETRIES", "7")
    configure(hindsight_api_url="http://configured", recall_timeout=0.5)
    adapter = HindsightRuntimeAdapter(hindsight_api_url="http://argument", max_retries=1)
    assert adapter.settings.hindsight_api_url == "http://argument"
    assert adapter.settings.recall_timeout == 0.5  # configure() over env
    assert adapter.settings.max_retries == 1  # argument over configure()/env
    reset_config()
    adapter = HindsightRuntimeAdapter()
    assert adapter.settings.hindsight_api_url == "http://env"
    assert adapter.settings.recall_timeout == 1.5
    assert adapter.settings.max_retries == 7


def test_every_setting_reads_its_environment_variable(monkeypatch, tmp_path):
    values = {
        "recall_budget": ("high", "high"),
        "recall_max_tokens": ("900", 900),
        "retain_async": ("false", False),
        "timeout": ("4", 4.0),
        "tags": ("a, b,,c", ["a", "b", "c"]),
        "verbose": ("yes", True),
        "recall_timeout": ("0.7", 0.7),
        "breaker_failure_threshold": ("5", 5),
        "breaker_reset_timeout": ("9", 9.0),
        "breaker_slow_threshold": ("7", 7),
        "breaker_slow_window": ("12", 12.0),
        "breaker_slow_ratio": ("0.6", 0.6),
        "breaker_slow_reset_timeout": ("2", 2.0),
        "max_retries": ("0", 0),
        "retry_base_delay": ("0.01", 0.01),
        "retry_max_delay": ("0.02", 0.02),
        "spool_dir": (str(tmp_path), str(tmp_path)),
        "spool_queue_url": ("https://sqs.eu-west-1.amazonaws.com/1/q", "https://sqs.eu-west-1.amazonaws.com/1/q"),
        "recall_candidate_tokens": ("8000", 8000),
        "retain_workers": ("2", 2),
        "exit_flush_timeout": ("1", 1.0),
        "auto_replay": ("off", False),
        "missions": ('{"support": {"retain_mission": "m"}}', '{"support": {"retain_mission": "m"}}'),
        "log_hash_salt": ("pepper", "pepper"),
    }
    assert set(values) == set(ENV_VARS)
    for name, (raw, _) in values.items():
        monkeypatch.setenv(ENV_VARS[name], raw)
    settings = resolve_settings({"hindsight_api_url": "http://h"}, config=None)
    for name, (_, expected) in values.items():
        assert getattr(settings, name) == expected, name


def test_the_queue_and_salt_variables_are_the_ones_the_constants_name():
    from memory_adapter.constants import LOG_HASH_SALT_ENV, SPOOL_QUEUE_URL_ENV

    assert ENV_VARS["spool_queue_url"] == SPOOL_QUEUE_URL_ENV
    assert ENV_VARS["log_hash_salt"] == LOG_HASH_SALT_ENV


def test_a_queue_url_must_be_a_url(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_ADAPTER_SPOOL_QUEUE_URL", "retains")
    with pytest.raises(ConfigurationError, match="spool_queue_url must be an SQS queue URL"):
        resolve_settings({"hindsight_api_url": "http://h"}, config=None)


def test_invalid_values_are_all_reported_at_once(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_ADAPTER_RECALL_TIMEOUT", "soon")
    monkeypatch.setenv("HINDSIGHT_ADAPTER_RETAIN_ASYNC", "maybe")
    with pytest.raises(ConfigurationError) as excinfo:
        resolve_settings({"hindsight_api_url": "ftp://h", "max_retries": -1}, config=None)
    message = str(excinfo.value)
    for fragment in ("HINDSIGHT_ADAPTER_RECALL_TIMEOUT", "HINDSIGHT_ADAPTER_RETAIN_ASYNC", "http://", "max_retries"):
        assert fragment in message


def test_configure_keeps_the_prior_art_signature_and_defaults():
    params = inspect.signature(configure).parameters
    prior_art = {
        "hindsight_api_url": None,
        "api_key": None,
        "recall_budget": "mid",
        "recall_max_tokens": 1500,
        "retain_async": True,
        "timeout": 15.0,
        "tags": None,
        "verbose": False,
    }
    assert list(params)[: len(prior_art)] == list(prior_art)
    for name, default in prior_art.items():
        assert params[name].default == default
        assert params[name].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert params["settings"].kind is inspect.Parameter.VAR_KEYWORD  # every other setting, by keyword only


def test_configure_takes_every_other_setting_by_keyword_and_refuses_unknown_ones(monkeypatch, tmp_path):
    monkeypatch.setenv("HINDSIGHT_ADAPTER_MAX_RETRIES", "5")
    config = configure("http://h", recall_timeout=0.5, spool_dir=str(tmp_path), breaker_slow_ratio=0.5)
    assert (config.recall_timeout, config.spool_dir, config.breaker_slow_ratio) == (0.5, str(tmp_path), 0.5)
    assert config.max_retries == 5  # not given: its variable
    with pytest.raises(TypeError, match="unexpected keyword argument 'recall_timeuot'"):
        configure("http://h", recall_timeuot=0.5)
    with pytest.raises(TypeError, match="'log_hash_salt'"):  # environment only
        configure("http://h", log_hash_salt="pepper")
    with pytest.raises(ConfigurationError, match=r"recall_timeout must be greater than 0, got -1\.0"):
        configure("http://h", recall_timeout=-1)


def test_configure_get_and_reset():
    assert get_config() is None
    config = configure("http://h", "k", "low", 100, False, 3.0, ["t"], True)
    assert get_config() is config
    assert isinstance(config, HindsightAgentCoreConfig)
    assert (config.recall_budget, config.recall_max_tokens, config.retain_async, config.tags) == (
        "low",
        100,
        False,
        ["t"],
    )
    reset_config()
    assert get_config() is None


def test_default_recall_deadline_is_at_most_two_seconds():
    assert HindsightRuntimeAdapter(hindsight_api_url="http://h").settings.recall_timeout <= 2.0


def test_the_api_key_is_never_in_a_repr():
    adapter = HindsightRuntimeAdapter(hindsight_api_url="http://h", api_key="s3cret-key")
    assert "s3cret-key" not in repr(adapter.settings)
    assert "s3cret-key" not in repr(configure(hindsight_api_url="http://h", api_key="s3cret-key"))


def test_a_field_added_with_bounds_is_read_checked_and_written_like_the_others():
    # GIVEN the adapter's settings with one more field, declared with its variable, default and bounds only
    extended = dataclasses.make_dataclass(
        "Extended",
        [("knob", int, setting("HINDSIGHT_ADAPTER_KNOB", 5, low=1, high=10))],
        bases=(HindsightAgentCoreConfig,),
    )
    # WHEN its variable and one of the adapter's own are out of range
    reader = SettingsReader({"HINDSIGHT_ADAPTER_KNOB": "11", "HINDSIGHT_ADAPTER_BREAKER_SLOW_RATIO": "1.5"})
    values = read_declared(extended, reader)
    # THEN both are refused, each naming its variable and the allowed range, and read as their defaults
    assert reader.problems == [
        "HINDSIGHT_ADAPTER_BREAKER_SLOW_RATIO must be between 0 and 1, got 1.5",
        "HINDSIGHT_ADAPTER_KNOB must be between 1 and 10, got 11",
    ]
    assert (values["knob"], values["breaker_slow_ratio"]) == (5, 0.8)
    # AND it is written back under its variable when changed, like every other setting
    assert extended(knob=7, hindsight_api_url="http://h").to_env() == {
        "HINDSIGHT_API_URL": "http://h",
        "HINDSIGHT_ADAPTER_KNOB": "7",
    }
