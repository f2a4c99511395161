"""Compatibility path: bank ids live in :mod:`memory_adapter.identity.bank_ids` (the identity contract).

Kept for code written against the earlier path (the project itself no longer imports it). New code imports
``memory_adapter.identity``.
"""

from memory_adapter.identity import bank_ids as _moved
from memory_adapter.identity.bank_ids import *  # noqa: F403 (the moved module's public names, as they were)

__all__ = _moved.__all__
