"""Exceptions raised by the memory adapter.

The two prior-art names (``HindsightAgentCoreError``, ``BankResolutionError``) are kept so code written for
``hindsight-agentcore`` catches the same errors after switching the import.
"""

from __future__ import annotations


class HindsightAgentCoreError(Exception):
    """Base class of every error the memory adapter raises."""


class BankResolutionError(HindsightAgentCoreError):
    """The turn's identity cannot be turned into a bank id (missing, blank or invalid part): fail closed."""


class ConfigurationError(HindsightAgentCoreError):
    """The adapter is misconfigured, e.g. no Hindsight URL is set anywhere."""
