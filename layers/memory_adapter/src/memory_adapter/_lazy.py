"""Lazy exports for package ``__init__`` modules: a name is imported from its module on first access only.

So ``import memory_adapter`` (and ``import memory_adapter.identity``) cost almost nothing, and a process that uses
one part (the Hindsight extension, the CDK app) never loads the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``exports`` (name -> module) and caching each value in ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
