"""A second local Hindsight started as the customer's "external" server *without* our isolation extension (its own
ports and data dir), beside the session's ``local_hindsight``, which runs with it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from tests.conftest import throwaway_hindsight


@pytest.fixture(scope="session")
def unisolated_hindsight() -> Iterator[LocalHindsight]:
    """Stock Hindsight: no tenant, validator or HTTP extension, so no authentication at all."""
    with throwaway_hindsight(LocalHindsightConfig.ephemeral(isolation=False)) as hindsight:
        yield hindsight
