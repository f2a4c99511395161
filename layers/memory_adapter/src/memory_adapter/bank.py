"""Compatibility module: ``hindsight_agentcore.bank`` under this package's name (turn identity and bank resolution).

The names are defined in :mod:`memory_adapter.context` and :mod:`memory_adapter.identity.errors`; this module exists
so that code written for hindsight-agentcore 0.1.3 works after renaming the package in its imports.
"""

from memory_adapter.context import BankResolver, TurnContext, default_bank_resolver
from memory_adapter.identity.errors import BankResolutionError

__all__ = ["BankResolutionError", "BankResolver", "TurnContext", "default_bank_resolver"]
