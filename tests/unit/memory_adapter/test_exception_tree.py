"""Every error the memory adapter package defines is one catchable family with self-explaining names."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import memory_adapter
from memory_adapter.exceptions import HindsightAgentCoreError


def _defined_errors() -> dict[str, type[BaseException]]:
    """Every exception class defined (not imported) in a module of the package, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(memory_adapter.__path__, prefix="memory_adapter."):
        if info.name.endswith(".__main__"):  # importing one runs its command line
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            defined_here = inspect.isclass(obj) and obj.__module__ == module.__name__ and obj.__name__ == name
            if defined_here and issubclass(obj, BaseException):  # (an alias kept for old code is not a definition)
                found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_error_the_package_defines_descends_from_one_root_and_says_error():
    # GIVEN every module of the package, imported
    errors = _defined_errors()
    # THEN there are errors to check (the walk found the modules)
    assert "memory_adapter.exceptions.ConfigurationError" in errors
    assert "memory_adapter.agentcore.errors.AuthError" in errors
    # AND each one is caught by `except HindsightAgentCoreError`, and its name ends in "Error"
    outside = sorted(name for name, cls in errors.items() if not issubclass(cls, HindsightAgentCoreError))
    assert outside == []
    unnamed = sorted(name for name in errors if not name.endswith("Error"))
    assert unnamed == []


def test_errors_that_were_value_errors_still_are():
    # GIVEN errors callers have caught as ValueError since before the one tree
    from memory_adapter.agentcore.request import DuplicateHeaderError, InvalidSessionError
    from memory_adapter.agentcore.settings import SettingsError
    from memory_adapter.missions import MissionsError

    # THEN they still are, so no existing `except ValueError` stops catching them
    for cls in (DuplicateHeaderError, InvalidSessionError, SettingsError, MissionsError):
        assert issubclass(cls, ValueError)
    # AND the agent's settings error keeps its message shape
    assert str(SettingsError(["A is missing", "B is bad"])) == (
        "invalid agent configuration:\n  - A is missing\n  - B is bad"
    )
