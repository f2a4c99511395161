"""Compatibility module: ``hindsight_agentcore.errors`` under this package's name.

The classes are defined in :mod:`memory_adapter.exceptions` (every error of this package) and
:mod:`memory_adapter.identity.errors`; this module exists so that code written for hindsight-agentcore 0.1.3 works
after renaming the package in its imports.
"""

from memory_adapter.exceptions import HindsightAgentCoreError
from memory_adapter.identity.errors import BankResolutionError

__all__ = ["BankResolutionError", "HindsightAgentCoreError"]
