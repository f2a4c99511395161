"""Latency summaries: percentiles by linear interpolation (numpy's default), in milliseconds."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["Timer", "percentile", "ratio", "summarize"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, linearly interpolated between the closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(samples_ms: Sequence[float]) -> dict[str, Any]:
    """Count, mean, p50, p90, p99, min and max of samples in milliseconds (rounded for the report)."""
    if not samples_ms:
        return {"n": 0}
    return {
        "n": len(samples_ms),
        "mean_ms": _r(statistics.fmean(samples_ms)),
        "p50_ms": _r(percentile(samples_ms, 50)),
        "p90_ms": _r(percentile(samples_ms, 90)),
        "p99_ms": _r(percentile(samples_ms, 99)),
        "min_ms": _r(min(samples_ms)),
        "max_ms": _r(max(samples_ms)),
    }


def ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator`` rounded, or ``None`` when undefined."""
    if not denominator or math.isnan(numerator) or math.isnan(denominator):
        return None
    return round(numerator / denominator, 4)


def _r(value: float) -> float:
    return round(value, 4) if value < 10 else round(value, 2)


class Timer:
    """``with Timer() as t: ...`` then ``t.ms``: wall time of the block on the monotonic high-resolution clock."""

    def __init__(self) -> None:
        self.started = 0.0
        self.ms = 0.0

    def __enter__(self) -> Timer:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ms = (time.perf_counter() - self.started) * 1000
