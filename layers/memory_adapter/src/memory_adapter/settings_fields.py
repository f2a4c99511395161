"""Settings declared once, by field: the field names its variable, default and bounds; reading and writing follow.

A process's settings class is a dataclass whose fields are made with :func:`setting`. :func:`read_declared` reads
them all through a :class:`~memory_adapter.settings_reader.SettingsReader` (every problem collected),
:func:`env_of` writes them back as the environment that reads back the same (what the stack gives the process), and
:func:`env_names` lists every variable. A new setting is one field. Standard library only: the CDK app and every
Lambda function import it (``pydantic-settings`` would cost ~90 ms of import per cold start, measured).

Example:
    >>> @dataclass(frozen=True, kw_only=True)
    ... class Probe:
    ...     timeout_s: float = setting("PROBE_TIMEOUT_SECONDS", 5.0, above=0)
    >>> Probe(**read_declared(Probe, SettingsReader({"PROBE_TIMEOUT_SECONDS": "2"})))
    Probe(timeout_s=2.0)
    >>> env_of(Probe(timeout_s=2.0))
    {'PROBE_TIMEOUT_SECONDS': '2'}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import MISSING, dataclass
from enum import StrEnum
from typing import Any, Final, Self

from memory_adapter.constants import (
    ADAPTER_ENV_PREFIX,
    CA_BUNDLE_ENV,
    DEFAULT_RECALL_BUDGET,
    DEFAULT_RECALL_CANDIDATE_TOKENS,
    DEFAULT_RECALL_MAX_TOKENS,
    HINDSIGHT_API_URL_ENV,
    MAX_RECALL_CANDIDATE_TOKENS,
    RECALL_BUDGETS,
)
from memory_adapter.settings_reader import Naming, SettingsReader, env_dict, not_one_of, out_of_range

__all__ = [
    "DeclaredSettings",
    "HindsightClientSettings",
    "RecallClientSettings",
    "Setting",
    "declared",
    "env_name",
    "env_names",
    "env_of",
    "read_declared",
    "same_setting",
    "secret_arn",
    "setting",
]

_KEY: Final = "memory_adapter.setting"
#: Names a setting declared without its variable after the field itself (see :func:`setting`).
_FIELD_NAMES: Final = Naming()


@dataclass(frozen=True, slots=True)
class Setting:
    """How one field is read from, and written to, the environment (see :func:`setting`)."""

    env: str | None
    kind: type | None = None
    low: float | None = None
    high: float | None = None
    above: float | None = None
    required: str | None = None
    always: bool = False
    parse: Callable[[SettingsReader, str], Any] | None = None
    write: Callable[[Any], object] | None = None
    choices: tuple[str, ...] | None = None

    def key(self, field_name: str, naming: Naming) -> str:
        """The variable (or key) of the field ``field_name``: ``env``, else the field's name spelled by ``naming``."""
        return self.env if self.env is not None else naming.key(field_name)

    @property
    def bounded(self) -> bool:
        """Whether the setting is a number with bounds."""
        return self.low is not None or self.high is not None or self.above is not None

    def out_of_range(self, name: str, value: object) -> str | None:
        """The problem with ``value`` (named ``name`` in the message) for these bounds or choices, or ``None``: for
        values given other than through :func:`read_declared` (arguments, settings built in code), which checks what
        it reads."""
        if self.choices is not None and value is not None and value not in self.choices:
            return not_one_of(name, self.choices, value)
        if not self.bounded:
            return None
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return f"{name} must be a number, got {value!r}"
        return out_of_range(name, number, low=self.low, high=self.high, above=self.above)


def setting(
    env: str | None,
    default: Any = None,
    *,
    factory: Callable[[], Any] | None = None,
    kind: type | None = None,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    choices: tuple[str, ...] | None = None,
    required: str | None = None,
    always: bool = False,
    parse: Callable[[SettingsReader, str], Any] | None = None,
    write: Callable[[Any], object] | None = None,
    repr: bool = True,
) -> Any:
    """A dataclass field read from the variable ``env``.

    Args:
        env: The environment variable; ``None``: the field's name as the reader's
            :class:`~memory_adapter.settings_reader.Naming` spells it (settings that several processes read under
            their own keys, e.g. the identity contract's ``JWT_*``, ``jwt_*`` and ``auth.*``).
        default: The value when the variable is unset (its type says how the variable is parsed: bool, int, float,
            tuple or list of names, text; ``kind`` for an enum or when the default is ``None``).
        factory: Makes the default instead (a list, or a value computed when the settings are built).
        kind: The value's type when the default does not tell (a ``StrEnum``, ``int``, ``float``).
        low: Inclusive lower bound of a number.
        high: Inclusive upper bound of a number.
        above: Exclusive lower bound of a number.
        choices: The values a text setting may take (any other is refused, naming the variable and these).
        required: Why the setting is required (the problem names it when the variable is unset).
        always: :func:`env_of` writes it even at its default (required and security-relevant settings).
        parse: Reads the value instead (``parse(reader, env)``), for values with their own syntax (JSON, URL).
        write: The value as :func:`~memory_adapter.settings_reader.env_text` writes it, when it is not plain.
        repr: Shown in the dataclass ``repr`` (``False`` for secrets).
    """
    meta = {_KEY: Setting(env, kind, low, high, above, required, always or required is not None, parse, write, choices)}
    if isinstance(default, list | dict | set):
        raise TypeError("give a tuple or a frozen value as a setting's default (or a factory)")
    if required is not None:
        return dataclasses.field(metadata=meta, repr=repr)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta, repr=repr)
    return dataclasses.field(default=default, metadata=meta, repr=repr)


def same_setting(cls: type, field_name: str) -> Any:
    """A field declared as ``cls``'s ``field_name`` (variable, default, bounds, choices): a setting that two settings
    classes read under one variable is declared once."""
    f = next(f for f in dataclasses.fields(cls) if f.name == field_name)
    return dataclasses.field(default=f.default, default_factory=f.default_factory, metadata=f.metadata, repr=f.repr)


def declared(cls: type) -> list[tuple[dataclasses.Field[Any], Setting]]:
    """Each field of ``cls`` made with :func:`setting`, with its declaration, in field order."""
    return [(f, f.metadata[_KEY]) for f in dataclasses.fields(cls) if _KEY in f.metadata]


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None if f.default is MISSING else f.default


def env_names(cls: type, naming: Naming = _FIELD_NAMES) -> tuple[str, ...]:
    """Every variable the fields of ``cls`` are read from, in field order (``naming`` spells those declared without
    one)."""
    return tuple(s.key(f.name, naming) for f, s in declared(cls))


def env_name(cls: type, field_name: str, naming: Naming = _FIELD_NAMES) -> str:
    """The variable the field ``field_name`` of ``cls`` is read from (for messages naming it)."""
    return next(s.key(f.name, naming) for f, s in declared(cls) if f.name == field_name)


def read_declared(cls: type, reader: SettingsReader, *, only: Collection[str] | None = None) -> dict[str, Any]:
    """Every declared field of ``cls`` (or those named in ``only``) by name, read from ``reader`` and checked against
    its bounds (problems go to ``reader.problems``; the values are only valid without problems)."""
    values: dict[str, Any] = {}
    for f, s in declared(cls):
        if only is None or f.name in only:
            values[f.name] = _read(f, s, reader)
    return values


def _read(f: dataclasses.Field[Any], s: Setting, reader: SettingsReader) -> Any:
    key = s.key(f.name, reader.naming)
    default = _default(f)
    kind = s.kind or (type(default) if default is not None else str)
    if s.parse is not None:
        value = s.parse(reader, key)
    elif isinstance(kind, type) and issubclass(kind, StrEnum):
        value = reader.choice(key, kind, default)
    elif kind is bool:
        value = reader.flag(key, bool(default))
    elif kind is int:
        value = reader.integer(key, default, low=_int(s.low), high=_int(s.high))
    elif kind is float:
        value = reader.number(key, default, low=s.low, high=s.high, above=s.above)
    elif kind is tuple or kind is list:
        value = kind(reader.csv(key)) or default
    elif s.choices is not None:
        value = reader.one_of(key, s.choices, default)
    else:
        text = reader.text(key)
        value = default if text is None else text
    if value is None and s.required is not None and not reader.given(key):
        reader.problem(f"{reader.name(key)} is required ({s.required})")
    return value


def env_of(settings: object, naming: Naming = _FIELD_NAMES) -> dict[str, str]:
    """The environment :func:`read_declared` reads back as ``settings``' declared fields: each field that differs
    from its default, and those declared ``always`` (``naming`` spells the variables of those declared without
    one)."""
    values: dict[str, object] = {}
    for f, s in declared(type(settings)):
        value = getattr(settings, f.name)
        if not s.always and value == _default(f):
            continue
        values[s.key(f.name, naming)] = s.write(value) if s.write is not None and value is not None else value
    return env_dict(values)


def _int(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


class DeclaredSettings:
    """Base of a settings dataclass whose fields are :func:`setting` s: :meth:`from_env`, :meth:`to_env` and
    :meth:`env_names` follow from the fields; :meth:`check` adds the rules between fields."""

    __slots__ = ()

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back as these settings (see :func:`env_of`)."""
        return env_of(self)

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """Every variable :meth:`from_env` reads."""
        return env_names(cls)

    @classmethod
    def from_env(cls, env: Mapping[str, object]) -> Self:
        """Read and check every setting; raise :meth:`error` listing every problem."""
        reader = SettingsReader(env)
        values = read_declared(cls, reader)
        cls.check(values, reader)
        if reader.problems:
            raise cls.error(reader.problems)
        return cls(**values)

    @classmethod
    def check(cls, values: Mapping[str, Any], reader: SettingsReader) -> None:
        """Record the problems of rules between settings with ``reader.problem`` (none by default)."""
        del values, reader

    @classmethod
    def error(cls, problems: list[str]) -> Exception:
        """The error :meth:`from_env` raises."""
        return ValueError(f"{cls.__name__}: invalid configuration: " + "; ".join(problems))


def _url(reader: SettingsReader, env: str) -> str:
    return reader.url(env)


def secret_arn(reader: SettingsReader, env: str) -> str | None:
    """A ``parse`` for a Secrets Manager secret's ARN (``None`` when unset): a name alone would grant nothing."""
    value = reader.text(env)
    if value is not None and not value.startswith("arn:"):
        reader.problem(f"{reader.name(env)} must be a Secrets Manager ARN, got {value[:80]!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class HindsightClientSettings(DeclaredSettings):
    """What every process that calls Hindsight reads, under one name each: Hindsight's URL and the private CA its
    certificate is signed by (read by :mod:`memory_adapter.tls`). The functions' settings classes extend it."""

    hindsight_api_url: str = setting(HINDSIGHT_API_URL_ENV, required="Hindsight's URL", parse=_url)
    ca_bundle: str | None = setting(CA_BUNDLE_ENV)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallClientSettings(HindsightClientSettings):
    """A client that recalls (the memory tools' function, the operator's functions): the same budget, block size and
    re-ranked candidates as the agent's memory adapter, under the adapter's variables (the adapter's config declares
    them as these, :func:`same_setting`)."""

    recall_budget: str = setting(ADAPTER_ENV_PREFIX + "RECALL_BUDGET", DEFAULT_RECALL_BUDGET, choices=RECALL_BUDGETS)
    recall_max_tokens: int = setting(ADAPTER_ENV_PREFIX + "RECALL_MAX_TOKENS", DEFAULT_RECALL_MAX_TOKENS, low=1)
    recall_candidate_tokens: int = setting(
        ADAPTER_ENV_PREFIX + "RECALL_CANDIDATE_TOKENS",
        DEFAULT_RECALL_CANDIDATE_TOKENS,
        low=0,
        high=MAX_RECALL_CANDIDATE_TOKENS,
    )
