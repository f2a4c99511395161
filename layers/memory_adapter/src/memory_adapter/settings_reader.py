"""Typed settings read from a mapping, every problem collected: the one machinery behind each settings parser.

The agent (its environment), the Hindsight isolation extension (the dict Hindsight's extension loader hands it), the
memory adapter (environment and constructor arguments) and the infrastructure's configuration check (a ``cdk.json``
dict) read their settings through :class:`SettingsReader`. A value may be a string (environment variables) or
already typed (JSON, arguments); a missing value, ``None`` or a blank string means "not set"; a bad value records one
problem, naming the setting the way its user writes it (:class:`Naming`), and yields the default, so the caller
reports every problem at once. Standard library only: the Hindsight extension and the CDK app import it too.

Example:
    >>> reader = SettingsReader({"JWT_LEEWAY_SECONDS": "soon", "MAX_PROMPT_CHARS": "900"})
    >>> reader.number("JWT_LEEWAY_SECONDS", 30.0, low=0, high=300)
    30.0
    >>> reader.integer("MAX_PROMPT_CHARS", 16000, low=1)
    900
    >>> reader.problems
    ["JWT_LEEWAY_SECONDS must be a number, got 'soon'"]
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

__all__ = ["Naming", "SettingsReader", "env_dict", "env_text", "not_one_of", "out_of_range"]

_E = TypeVar("_E", bound=StrEnum)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
#: A field name ending in this suffix is a duration in seconds; :class:`Naming` spells the suffix per component.
_SECONDS_SUFFIX = "_s"


def env_text(value: object) -> str | None:
    """``value`` written the way :class:`SettingsReader` reads it back (the ``to_env`` half of every settings class).

    ``None`` and empty lists are "not set" (``None``); booleans are ``true``/``false``; a whole float is written
    without its ``.0`` (``3600``: what the deployed templates have always held); lists are comma-separated; a mapping
    is compact JSON; enums are their value.
    """
    if value is None or (isinstance(value, list | tuple) and not value):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    if isinstance(value, Mapping):
        return json.dumps(value, separators=(",", ":"))
    raise TypeError(f"no environment spelling for {type(value).__name__}")


def env_dict(values: Mapping[str, object]) -> dict[str, str]:
    """``values`` (key -> typed value) as environment variables, unset values left out (see :func:`env_text`)."""
    out: dict[str, str] = {}
    for key, value in values.items():
        text = env_text(value)
        if text is not None:
            out[key] = text
    return out


@dataclass(frozen=True, slots=True)
class Naming:
    """How one component spells the keys of shared settings, and how it names them in messages.

    A shared setting has one field name (``leeway_s``); each component reads it under its own key: the agent's
    environment ``JWT_LEEWAY_SECONDS``, the Hindsight extension's config ``jwt_leeway_s`` (shown to people as
    ``HINDSIGHT_API_TENANT_JWT_LEEWAY_S``, the variable they set), the CDK app's ``leeway_seconds`` (shown as
    ``auth.leeway_seconds``).

    Args:
        prefix: Prepended to a field name to make its key.
        upper: Keys are upper case (environment variables).
        seconds: The spelling of the ``_s`` suffix of duration fields in keys (``"_SECONDS"``, ``"_s"``).
        shown_prefix: Prepended when a key is named in a message.
        shown_upper: Keys are named upper case in messages.
    """

    prefix: str = ""
    upper: bool = False
    seconds: str = _SECONDS_SUFFIX
    shown_prefix: str = ""
    shown_upper: bool = False

    def key(self, field_name: str) -> str:
        """The key under which this component reads the field ``field_name``."""
        if field_name.endswith(_SECONDS_SUFFIX):
            field_name = field_name[: -len(_SECONDS_SUFFIX)] + self.seconds
        key = self.prefix + field_name
        return key.upper() if self.upper else key

    def shown(self, key: str) -> str:
        """``key`` as the component's users write it (for messages)."""
        return self.shown_prefix + (key.upper() if self.shown_upper else key)


def out_of_range(
    name: str,
    value: float,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
) -> str | None:
    """The problem with ``value`` (named ``name``), or ``None`` when it is finite and within the bounds.

    ``low``/``high`` are inclusive; ``above`` is an exclusive lower bound (``above=0``: strictly positive).
    """
    within = (low is None or value >= low) and (high is None or value <= high) and (above is None or value > above)
    if math.isfinite(value) and within:
        return None
    if low is not None and high is not None:
        wanted = f"between {low:g} and {high:g}"
    else:
        bounds = [
            f"greater than {above:g}" if above is not None else "",
            f"at least {low:g}" if low is not None else "",
            f"at most {high:g}" if high is not None else "",
        ]
        wanted = " and ".join(b for b in bounds if b) or "a finite number"
    return f"{name} must be {wanted}, got {value!r}"


def not_one_of(name: str, allowed: Iterable[str], value: object) -> str:
    """The problem with ``value`` (named ``name``), which is none of the ``allowed`` values."""
    return f"{name} must be one of: {', '.join(allowed)}; got {value!r}"


@dataclass
class SettingsReader:
    """Reads typed values from ``values``; each problem is appended to :attr:`problems` instead of raised.

    Args:
        values: The settings as given (environment, loader dict, JSON context, arguments).
        naming: How keys are shown in messages.
    """

    values: Mapping[str, object]
    naming: Naming = field(default_factory=Naming)
    problems: list[str] = field(default_factory=list)

    def name(self, key: str) -> str:
        """``key`` as the user writes it."""
        return self.naming.shown(key)

    def problem(self, message: str) -> None:
        """Record a problem found by the caller (a rule between several settings)."""
        self.problems.append(message)

    def raw(self, key: str) -> object | None:
        """The value of ``key``; ``None`` when missing, ``None`` or a blank string."""
        value = self.values.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return value

    def given(self, key: str) -> bool:
        """Whether ``key`` is set (see :meth:`raw`)."""
        return self.raw(key) is not None

    def text(self, key: str) -> str | None:
        """A stripped string, or ``None`` when not set."""
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.problem(f"{self.name(key)} must be text, got {type(value).__name__}")
            return None
        return value.strip()

    def url(self, key: str, *, what: str = "Hindsight's URL") -> str:
        """A required http(s) URL, without its trailing slash: the one check of every reader of Hindsight's URL
        (``""`` and a problem when missing or not http(s))."""
        value = self.text(key)
        if value is None:
            self.problem(f"{self.name(key)} is required: {what}")
            return ""
        if not value.startswith(("http://", "https://")):
            self.problem(f"{self.name(key)} must be {what}, an http(s) URL; got {value[:80]!r}")
            return ""
        return value.rstrip("/")

    def csv(self, key: str) -> tuple[str, ...]:
        """Comma-separated names (or a list of strings), blanks dropped; ``()`` when not set."""
        value = self.raw(key)
        if value is None:
            return ()
        if isinstance(value, str):
            items = value.split(",")
        elif isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            items = list(value)
        else:
            self.problem(f"{self.name(key)} must be a comma-separated list of names, got {type(value).__name__}")
            return ()
        return tuple(item.strip() for item in items if item.strip())

    def flag(self, key: str, default: bool = False) -> bool:
        """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``, or a JSON boolean)."""
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text not in _FALSE:
            self.problem(f"{self.name(key)} must be true or false, got {value!r}")
            return default
        return False

    def choice(self, key: str, enum: type[_E], default: _E | None) -> _E | None:
        """One member of ``enum`` by value (case-insensitive)."""
        value = self.text(key)
        if value is None:
            return default
        try:
            return enum(value.lower())
        except ValueError:
            self.problem(not_one_of(self.name(key), (member.value for member in enum), value))
            return default

    def one_of(self, key: str, allowed: Collection[str], default: str | None) -> str | None:
        """One of the ``allowed`` values, as written."""
        value = self.text(key)
        if value is None:
            return default
        if value not in allowed:
            self.problem(not_one_of(self.name(key), allowed, value))
            return default
        return value

    def number(
        self,
        key: str,
        default: float,
        *,
        low: float | None = None,
        high: float | None = None,
        above: float | None = None,
    ) -> float:
        """A finite number within the bounds (see :func:`out_of_range`), else ``default`` and a problem."""
        value = self._numeric(key, integer=False)
        if value is None:
            return default
        problem = out_of_range(self.name(key), value, low=low, high=high, above=above)
        if problem is not None:
            self.problem(problem)
            return default
        return float(value)

    def integer(self, key: str, default: int, *, low: int | None = None, high: int | None = None) -> int:
        """A whole number within the inclusive bounds, else ``default`` and a problem."""
        value = self._numeric(key, integer=True)
        if value is None:
            return default
        problem = out_of_range(self.name(key), value, low=low, high=high)
        if problem is not None:
            self.problem(problem)
            return default
        return int(value)

    def json_object(self, key: str, *, what: str = "a JSON object") -> dict[str, Any] | None:
        """A JSON object (given as a JSON string or as a mapping); ``None`` when not set or not an object.

        ``what`` describes the expected document in the problem message.
        """
        value = self.raw(key)
        if value is None:
            return None
        if isinstance(value, Mapping):
            return dict(value)
        if isinstance(value, str):
            try:
                document = json.loads(value)
            except ValueError:
                document = None
            if isinstance(document, dict):
                return document
        self.problem(f"{self.name(key)} must be {what}")
        return None

    def unknown(self, known: frozenset[str] | set[str]) -> list[str]:
        """Keys of :attr:`values` that are not in ``known``, as shown to users (sorted)."""
        return sorted(self.name(key) for key in self.values if key not in known)

    def _numeric(self, key: str, *, integer: bool) -> float | int | None:
        value = self.raw(key)
        if value is None:
            return None
        kind = "an integer" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.problem(f"{self.name(key)} must be {kind}, got {type(value).__name__}")
            return None
        if isinstance(value, str):
            try:
                return int(value.strip()) if integer else float(value.strip())
            except ValueError:
                self.problem(f"{self.name(key)} must be {kind}, got {value!r}")
                return None
        if integer and not float(value).is_integer():
            self.problem(f"{self.name(key)} must be {kind}, got {value!r}")
            return None
        return int(value) if integer else float(value)
