"""memory_adapter.settings_fields: a setting declared once, by field, is read, checked, written and listed."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import pytest

from memory_adapter.settings_fields import (
    DeclaredSettings,
    declared,
    env_name,
    env_names,
    env_of,
    read_declared,
    same_setting,
    setting,
)
from memory_adapter.settings_reader import Naming, SettingsReader


class Mode(StrEnum):
    FAST = "fast"
    SAFE = "safe"


@dataclass(frozen=True, slots=True, kw_only=True)
class Example(DeclaredSettings):
    name: str = setting("EXAMPLE_NAME", required="it names the example")
    mode: Mode = setting("EXAMPLE_MODE", Mode.SAFE, always=True)
    rounds: int = setting("EXAMPLE_ROUNDS", 4, low=1, high=10)
    timeout_s: float = setting("EXAMPLE_TIMEOUT_SECONDS", 2.0, above=0)
    on: bool = setting("EXAMPLE_ON", False)
    tags: tuple[str, ...] = setting("EXAMPLE_TAGS", ())
    note: str | None = setting("EXAMPLE_NOTE")


def test_a_field_is_read_under_its_variable_with_its_type() -> None:
    env = {
        "EXAMPLE_NAME": "x",
        "EXAMPLE_MODE": "FAST",
        "EXAMPLE_ROUNDS": "7",
        "EXAMPLE_TIMEOUT_SECONDS": "0.5",
        "EXAMPLE_ON": "yes",
        "EXAMPLE_TAGS": "a, b",
        "EXAMPLE_NOTE": " hi ",
    }
    assert Example.from_env(env) == Example(
        name="x", mode=Mode.FAST, rounds=7, timeout_s=0.5, on=True, tags=("a", "b"), note="hi"
    )


def test_every_problem_is_reported_at_once_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="invalid configuration") as err:
        Example.from_env({"EXAMPLE_MODE": "slow", "EXAMPLE_ROUNDS": "11", "EXAMPLE_TIMEOUT_SECONDS": "0"})
    message = str(err.value)
    assert "EXAMPLE_NAME is required (it names the example)" in message
    assert "EXAMPLE_MODE must be one of: fast, safe; got 'slow'" in message
    assert "EXAMPLE_ROUNDS must be between 1 and 10, got 11" in message
    assert "EXAMPLE_TIMEOUT_SECONDS must be greater than 0, got 0.0" in message


def test_written_are_the_changed_fields_and_those_always_stated() -> None:
    assert Example(name="x").to_env() == {"EXAMPLE_NAME": "x", "EXAMPLE_MODE": "safe"}
    changed = Example(name="x", rounds=2, tags=("a", "b"), on=True)
    assert changed.to_env() == {
        "EXAMPLE_NAME": "x",
        "EXAMPLE_MODE": "safe",
        "EXAMPLE_ROUNDS": "2",
        "EXAMPLE_ON": "true",
        "EXAMPLE_TAGS": "a,b",
    }
    assert Example.from_env(changed.to_env()) == changed


def test_the_variables_are_listed_from_the_fields() -> None:
    assert Example.env_names() == (
        "EXAMPLE_NAME",
        "EXAMPLE_MODE",
        "EXAMPLE_ROUNDS",
        "EXAMPLE_TIMEOUT_SECONDS",
        "EXAMPLE_ON",
        "EXAMPLE_TAGS",
        "EXAMPLE_NOTE",
    )
    assert env_name(Example, "timeout_s") == "EXAMPLE_TIMEOUT_SECONDS"


def test_a_mutable_default_is_refused() -> None:
    with pytest.raises(TypeError, match="tuple"):
        setting("X", [])


@dataclass(frozen=True, slots=True, kw_only=True)
class Shared:
    """Settings each component reads under its own keys (the field name spelled by the reader's Naming)."""

    leeway_s: float = setting(None, 30.0, low=0, high=300)
    names: list[str] = setting(None, factory=list, kind=list)


def test_a_setting_without_a_variable_is_read_and_written_under_each_components_spelling() -> None:
    agent = Naming(prefix="JWT_", upper=True, seconds="_SECONDS")
    stack = Naming(seconds="_seconds", shown_prefix="auth.")
    assert env_names(Shared, agent) == ("JWT_LEEWAY_SECONDS", "JWT_NAMES")
    reader = SettingsReader({"leeway_seconds": "301", "names": "a, b"}, stack)
    assert read_declared(Shared, reader) == {"leeway_s": 30.0, "names": ["a", "b"]}
    assert reader.problems == ["auth.leeway_seconds must be between 0 and 300, got 301.0"]
    assert env_of(Shared(leeway_s=5, names=["x"]), agent) == {"JWT_LEEWAY_SECONDS": "5", "JWT_NAMES": "x"}
    assert env_of(Shared()) == {}  # a factory's default is a default too
    assert Shared().names is not Shared().names


def test_a_value_given_in_code_is_checked_against_the_declared_bounds() -> None:
    (_, leeway), _ = declared(Shared)
    assert leeway.out_of_range("leeway_s", 301) == "leeway_s must be between 0 and 300, got 301.0"
    assert leeway.out_of_range("leeway_s", "soon") == "leeway_s must be a number, got 'soon'"
    assert leeway.out_of_range("leeway_s", 300) is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Chosen(DeclaredSettings):
    depth: str = setting("EXAMPLE_DEPTH", "mid", choices=("low", "mid", "high"))
    on_leak: str = setting("EXAMPLE_ON_LEAK", "fail", choices=("fail", "warn"), always=True)


def test_a_text_setting_takes_only_its_declared_choices() -> None:
    # GIVEN settings whose fields declare the values they may take
    assert Chosen.from_env({"EXAMPLE_DEPTH": " high "}) == Chosen(depth="high")
    assert Chosen.from_env({}).to_env() == {"EXAMPLE_ON_LEAK": "fail"}
    # WHEN another value is given, THEN it is refused naming the variable and every allowed value (case matters)
    with pytest.raises(ValueError, match="invalid configuration") as err:
        Chosen.from_env({"EXAMPLE_DEPTH": "HIGH", "EXAMPLE_ON_LEAK": "ignore"})
    assert "EXAMPLE_DEPTH must be one of: low, mid, high; got 'HIGH'" in str(err.value)
    assert "EXAMPLE_ON_LEAK must be one of: fail, warn; got 'ignore'" in str(err.value)
    # AND a value given in code is checked against the same choices
    (_, depth), _ = declared(Chosen)
    assert depth.out_of_range("depth", "huge") == "depth must be one of: low, mid, high; got 'huge'"
    assert depth.out_of_range("depth", "low") is None


def test_a_setting_two_classes_read_is_declared_once() -> None:
    from memory_adapter.config import HindsightAgentCoreConfig
    from memory_adapter.settings_fields import RecallClientSettings

    # GIVEN a class that reads a setting of another under the same variable
    @dataclass(frozen=True, kw_only=True)
    class Reuses(DeclaredSettings):
        depth: str = same_setting(Chosen, "depth")

    # THEN it has the one declaration: variable, default and choices
    assert declared(Reuses)[0][1] is declared(Chosen)[0][1]
    assert Reuses().depth == "mid"
    with pytest.raises(ValueError, match="EXAMPLE_DEPTH must be one of: low, mid, high; got 'deep'"):
        Reuses.from_env({"EXAMPLE_DEPTH": "deep"})
    # AND the adapter's recall budget and block size are the recall clients' declarations
    adapter = {f.name: s for f, s in declared(HindsightAgentCoreConfig)}
    clients = {f.name: s for f, s in declared(RecallClientSettings)}
    assert adapter["recall_budget"] is clients["recall_budget"]
    assert adapter["recall_max_tokens"] is clients["recall_max_tokens"]


def test_a_secret_is_named_by_its_arn_in_every_process_that_reads_it() -> None:
    from memory_adapter.agentcore.settings import AgentMemorySettings, SettingsError
    from memory_adapter.queue_replay import ReplaySettings
    from memory_adapter.settings_fields import secret_arn

    # GIVEN the one rule, declared by the field of each process that reads the agent key's secret
    for cls in (AgentMemorySettings, ReplaySettings):
        (arn,) = [s for f, s in declared(cls) if s.env == "HINDSIGHT_API_KEY_SECRET_ARN"]
        assert arn.parse is secret_arn
    # THEN a name that is not an ARN is refused, naming the variable
    env = {"AGENT_NAME": "a", "AUTH_MODE": "iam", "HINDSIGHT_API_URL": "http://h"}
    with pytest.raises(SettingsError, match="HINDSIGHT_API_KEY_SECRET_ARN must be a Secrets Manager ARN, got 'k'"):
        AgentMemorySettings.from_env({**env, "HINDSIGHT_API_KEY_SECRET_ARN": "k"})
    arn_env = {**env, "HINDSIGHT_API_KEY_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:k"}
    assert AgentMemorySettings.from_env(arn_env).hindsight_api_key_secret_arn == arn_env["HINDSIGHT_API_KEY_SECRET_ARN"]
