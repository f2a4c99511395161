"""Reusable constructs; each takes typed arguments (a frozen props dataclass where a stack passes them through whole,
``NetworkProps``, ``MemoryServiceProps``, ...; keyword-only otherwise) and exposes what others connect to."""
