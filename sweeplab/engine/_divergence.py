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

from typing import Any

from ray.tune import Stopper

from sweeplab._numbers import diverged

__all__ = ["DivergenceStopper"]


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
