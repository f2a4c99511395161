"""A second local Hindsight started as the customer's "external" server *without* our isolation extension (its own
ports and data dir), beside the session's ``local_hindsight``, which runs with it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from localdev.hindsight import LocalHindsight, LocalHindsightConfig


@pytest.fixture(scope="session")
def unisolated_hindsight() -> Iterator[LocalHindsight]:
    """Stock Hindsight: no tenant, validator or HTTP extension, so no authentication at all."""
    hindsight = LocalHindsight(LocalHindsightConfig.ephemeral(isolation=False))
    hindsight.start()
    hindsight.stop_when_gone(delete=True)
    try:
        yield hindsight
    finally:
        hindsight.stop()
        shutil.rmtree(hindsight.data_dir, ignore_errors=True)
