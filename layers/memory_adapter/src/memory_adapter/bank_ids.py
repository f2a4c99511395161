"""Compatibility path: bank ids live in :mod:`memory_adapter.identity.bank_ids` (the identity contract).

Kept because code outside this package imports ``memory_adapter.bank_ids`` (the local tools, the benchmarks, the
infrastructure's bundle check). New code imports ``memory_adapter.identity``.
"""

from memory_adapter.identity.bank_ids import (
    MAX_PART_BYTES,
    BankOwner,
    decode_part,
    encode_part,
    format_bank_id,
    parse_bank_id,
)

__all__ = ["MAX_PART_BYTES", "BankOwner", "decode_part", "encode_part", "format_bank_id", "parse_bank_id"]
