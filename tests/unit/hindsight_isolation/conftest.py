"""Fixtures of the admission tests (tests/unit/hindsight_isolation/admission_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hindsight_isolation.admission import RecallGate
from hindsight_isolation.settings import AdmissionConfig
from tests.unit.hindsight_isolation.admission_harness import Clock, installed_gate


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gate(clock: Clock) -> Iterator[RecallGate]:
    """A gate of 2 slots and 0.5 s of queueing at most (no latency target: its deadline bounds a recall), installed
    for the test."""
    with installed_gate(clock, AdmissionConfig(concurrency=2, max_wait_s=0.5, target=0.0)) as current:
        yield current


@pytest.fixture
def adaptive(clock: Clock) -> Iterator[RecallGate]:
    """A gate of 4 slots at most that lets in fewer while recalls run over 1.5x a recall served alone; no queue."""
    with installed_gate(clock, AdmissionConfig(concurrency=4, max_wait_s=0.0, tolerance=1.5)) as current:
        yield current
