"""Diverged trials: a report whose metric is NaN or infinite stops its trial at once.

A trial that diverged (its loss overflowed, its weights went NaN) never recovers, yet a
scheduler keeps it: Tune's ASHA compares rung values with ``nanpercentile``, and a NaN is never
below a cutoff, so such a trial trained its full budget while finite trials were stopped. The
check is a Tune ``Stopper`` rather than a scheduler wrapper: Tune's controller asks the stopper
about each result before the scheduler sees it, for every scheduler (FIFO, ASHA, HyperBand,
median stopping, PBT, a configured one) and for trials on warm slots alike, and a configured
scheduler object stays the object the user gave.

The trial's status is then ``diverged`` (the live table, MLflow, the ranking), it ranks below
every other trial, and its searcher learns it as failed
(:mod:`sweeplab.strategies._searcher_feedback`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ray.tune import Stopper

from sweeplab._numbers import is_finite_number, is_number

__all__ = ["DivergenceStopper", "diverged"]


def diverged(result: Mapping[str, Any] | None, metric: str) -> bool:
    """Whether `result` reports `metric` as NaN or infinite (``a/b`` reaches nested dicts)."""
    value: Any = result
    for part in [metric] if result and metric in result else metric.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return is_number(value) and not is_finite_number(value)


class DivergenceStopper(Stopper):
    """Stops a trial at its first report whose metric is NaN or infinite.

    Args:
        metric: The sweep's metric.
    """

    def __init__(self, metric: str) -> None:
        self.metric = metric

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return diverged(result, self.metric)

    def stop_all(self) -> bool:
        return False
