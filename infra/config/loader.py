"""Read the deployment configuration from CDK context, once, through the shared settings reader.

Sources, lowest precedence first (one source, parsed once):

1. ``context.defaults`` in ``cdk.json``: every setting with its default.
2. ``context.envs.<env>`` in ``cdk.json``: the overlay of the environment picked with ``-c env=<name>``.
3. ``-c <section>.<key>=<value>`` on the command line (strings, read as the setting's type; lists are
   comma-separated, ``tags`` is JSON, ``null`` unsets an optional setting).

Each value is read by :class:`memory_adapter.settings_reader.SettingsReader` according to the type of its field in
:mod:`infra.config.model` (so the names live only there); a value that cannot be read is reported and replaced by
its default, so the rules of :mod:`infra.config.rules` still check everything else, and one :class:`ConfigError`
lists every problem.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import types
import typing
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from infra.config import rules
from infra.config.model import AppConfig
from memory_adapter.settings_reader import Naming, SettingsReader

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CDK_JSON = PROJECT_ROOT / "cdk.json"
DEFAULT_ENV = "dev"

T = TypeVar("T")


class ConfigError(ValueError):
    """The deployment configuration is invalid; ``errors`` lists every problem found (so does the message)."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {e}" for e in self.errors))


class ContextSource(typing.Protocol):
    """What :func:`load_config` needs from a CDK App: ``node.try_get_context``."""

    def try_get_context(self, key: str) -> Any:
        """Return the context value for key, or None."""

    def get_all_context(self) -> dict[str, Any]:
        """Every context key and value (the ``-c`` ones included)."""


class DictContext:
    """A :class:`ContextSource` over a plain dict (the command-line check, the smoke test and tests)."""

    def __init__(self, context: Mapping[str, Any]) -> None:
        self._context = context

    def try_get_context(self, key: str) -> Any:
        """The value of ``key``, or None."""
        return self._context.get(key)

    def get_all_context(self) -> dict[str, Any]:
        """Every key and value."""
        return dict(self._context)


_HINTS = typing.get_type_hints(AppConfig)
#: Section name -> its dataclass (the AppConfig fields that are dataclasses).
SECTIONS: Mapping[str, type[Any]] = {
    f.name: _HINTS[f.name] for f in dataclasses.fields(AppConfig) if dataclasses.is_dataclass(_HINTS[f.name])
}
#: The top-level settings (``prefix``, ``region``, ...): AppConfig's other fields, except the env's name.
TOP_LEVEL = tuple(f.name for f in dataclasses.fields(AppConfig) if f.name not in SECTIONS and f.name != "env_name")


def section_keys(cls: type[Any]) -> tuple[str, ...]:
    """The keys a section may hold: its fields, or, for a section of names (``retention``: kind -> days), the
    names its type declares (``section_keys()``)."""
    declared = getattr(cls, "section_keys", None)
    return tuple(declared()) if declared is not None else tuple(f.name for f in dataclasses.fields(cls))


def load_config(node: ContextSource) -> AppConfig:
    """Build and validate the configuration from CDK context (``app.node``); raise one :class:`ConfigError`."""
    env_name = str(node.try_get_context("env") or DEFAULT_ENV)
    defaults, merged = _merged_context(node, env_name)
    problems = _unknown_command_line_keys(node)
    unknown = sorted(set(merged) - set(TOP_LEVEL) - set(SECTIONS))
    problems.extend(_not_a_setting(key, [*TOP_LEVEL, *SECTIONS], "remove it from cdk.json") for key in unknown)
    top = _read_fields(AppConfig, TOP_LEVEL, merged, defaults, Naming(), problems)
    sections: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        raw = merged.get(name)
        if not isinstance(raw, Mapping) or not isinstance(defaults.get(name), Mapping):  # (an env's overlay is no fix)
            got = type(defaults.get(name)).__name__ if name in defaults else "nothing"
            problems.append(f"{name} must be a section (a JSON object) in cdk.json context.defaults, got {got}")
            sections[name] = None
            continue
        if hasattr(cls, "from_section"):  # a section of names, read (and checked) by its own type
            sections[name], found = cls.from_section(raw, f"{name}.")
            problems.extend(found)
            continue
        names = section_keys(cls)
        naming = Naming(shown_prefix=f"{name}.")
        problems.extend(
            _not_a_setting(naming.shown(key), [naming.shown(n) for n in names], "remove it from cdk.json")
            for key in sorted(set(raw) - set(names))
        )
        fields = _read_fields(cls, names, raw, defaults.get(name) or {}, naming, problems)
        sections[name] = cls(**fields) if fields is not None else None
    # A value that could not even be read (a bad enum, a non-number) does not hide the other problems: every part
    # that was read is still checked, so one run lists everything.
    problems.extend(rules.problems(env_name, top, sections))
    if problems or top is None:
        raise ConfigError(problems)
    return AppConfig(env_name=env_name, **top, **sections)


#: A context key shaped like one of ours (``hindsight.cpu``, ``region``); CDK's own keys have ``:``, ``@`` or ``-``.
_SETTING_SHAPED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")
#: Context keys that are not settings but are read: the env's name and cdk.json's two layers.
_STRUCTURE = ("env", "defaults", "envs")


def _unknown_command_line_keys(node: ContextSource) -> list[str]:
    """Problems for ``-c`` keys that are no setting (a typo such as ``-c hindsight.cpuu=2048`` must not be ignored)."""
    known = [*TOP_LEVEL, *(f"{s}.{key}" for s, cls in SECTIONS.items() for key in section_keys(cls))]
    problems = []
    for key in sorted(node.get_all_context()):
        if key in known or key in _STRUCTURE or not _SETTING_SHAPED.fullmatch(key):
            continue
        if key in SECTIONS:
            problems.append(f"{key} is a section, not a setting: set one of its keys with -c {key}.<key>=<value>")
            continue
        problems.append(_not_a_setting(key, known, "remove the -c option (or that key of cdk.json's context)"))
    return problems


def _not_a_setting(key: str, known: Sequence[str], remedy: str) -> str:
    """``<key> is not a setting``, with the closest known name when there is one."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    fix = f"did you mean {close[0]}? Otherwise {remedy}" if close else f"check its spelling or {remedy}"
    return f"{key} is not a setting: {fix}; docs/deploying.md#configuration-reference lists every setting"


def load_config_from_cdk_json(overrides: Mapping[str, Any] | None = None, *, path: Path = CDK_JSON) -> AppConfig:
    """The configuration ``cdk synth`` would use with these ``-c key=value`` overrides (no CDK app needed)."""
    return load_config(DictContext(context_from_cdk_json(overrides, path=path)))


def context_from_cdk_json(overrides: Mapping[str, Any] | None = None, *, path: Path = CDK_JSON) -> dict[str, Any]:
    """The context the CDK CLI would pass: cdk.json's ``context`` plus ``-c`` style overrides."""
    context: dict[str, Any] = dict(json.loads(path.read_text())["context"])
    context.update(overrides or {})
    return context


def _merged_context(node: ContextSource, env_name: str) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """``(defaults, defaults + env overlay + command-line overrides)``; structural problems raise at once."""
    defaults = node.try_get_context("defaults")
    envs = node.try_get_context("envs") or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError(["context 'defaults' is missing: run from the project folder so cdk.json is read"])
    if not isinstance(envs, Mapping) or env_name not in envs:
        known = ", ".join(sorted(envs)) if isinstance(envs, Mapping) else ""
        raise ConfigError([f"env '{env_name}' is not defined under context 'envs' in cdk.json (known: {known})"])
    merged = _deep_merge(defaults, envs[env_name] or {})
    keys = [*TOP_LEVEL, *(f"{s}.{key}" for s, cls in SECTIONS.items() for key in section_keys(cls))]
    for key in keys:
        value = node.try_get_context(key)
        if value is None:
            continue
        value = None if value == "null" else value
        section, _, name = key.partition(".")
        if name:
            merged[section] = {**(merged.get(section) or {}), name: value}
        else:
            merged[section] = value
    return defaults, merged


def _deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) and key != "tags":
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_fields(
    cls: type[Any],
    names: Sequence[str],
    values: Mapping[str, Any],
    fallback: Mapping[str, Any],
    naming: Naming,
    problems: list[str],
) -> dict[str, Any] | None:
    """The fields ``names`` of ``cls`` read from ``values``; None when a required one has no usable value.

    A value that cannot be read is reported once and replaced by its ``fallback`` (the ``cdk.json`` default), so
    the rules still see a complete section.
    """
    hints = typing.get_type_hints(cls)
    get = SettingsReader(values, naming)
    out: dict[str, Any] = {}
    complete = True
    for name in names:
        kind, optional = _kind(hints[name])
        if not get.given(name):
            if not optional:
                get.problem(f"{get.name(name)} is required: set it in cdk.json context.defaults")
                complete = False
            out[name] = None
            continue
        seen = len(get.problems)
        out[name] = _read_value(get, name, kind)
        if len(get.problems) > seen:
            quiet = SettingsReader(fallback, naming)
            out[name] = _read_value(quiet, name, kind) if quiet.given(name) and not quiet.problems else None
            complete = complete and (optional or out[name] is not None)
    problems.extend(get.problems)
    return out if complete else None


def _kind(hint: Any) -> tuple[Any, bool]:
    """``(type without None, whether None is allowed)``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        (inner,) = args
        return inner, True
    return hint, False


def _read_value(get: SettingsReader, key: str, kind: Any) -> Any:
    """One value as ``kind``; a problem goes to ``get.problems`` (the return value is then meaningless)."""
    origin = typing.get_origin(kind) or kind
    if origin is bool:
        return get.flag(key)
    if origin is int:
        return get.integer(key, 0)
    if origin is float:
        return get.number(key, 0.0)
    if origin is tuple:
        return get.csv(key)
    if origin in (dict, Mapping):
        return _string_mapping(get, key)
    if isinstance(origin, type) and issubclass(origin, StrEnum):
        return get.choice(key, origin, None)
    text = get.text(key)
    if origin is Path and text is not None:
        path = Path(text)
        return path if path.is_absolute() else PROJECT_ROOT / path
    return text


def _string_mapping(get: SettingsReader, key: str) -> dict[str, str] | None:
    value = get.json_object(key, what="a JSON object of names to text values")
    if value is not None and not all(isinstance(v, str) for v in value.values()):
        get.problem(f"{get.name(key)} must be a JSON object of names to text values")
        return None
    return value
