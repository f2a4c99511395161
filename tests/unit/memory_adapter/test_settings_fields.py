"""memory_adapter.settings_fields: a setting declared once, by field, is read, checked, written and listed."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import pytest

from memory_adapter.settings_fields import DeclaredSettings, env_name, setting


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
