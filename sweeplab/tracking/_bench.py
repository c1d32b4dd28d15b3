"""Throughput of the tracker's logging path (used by the benchmark suite)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from sweeplab.keys import ITERATION_KEY
from sweeplab.tracking._tracker import SweepTracker

__all__ = ["benchmark_logging"]


class _FakeTrial:
    """The two attributes of a Tune trial the tracker reads before any result."""

    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id
        self.config = {"lr": 0.1, "optimizer": {"name": "sgd", "momentum": 0.9}}
        self.local_path = self.path = None


def benchmark_logging(
    tracking_uri: str, n_points: int, *, n_trials: int = 4, metrics_per_report: int = 4
) -> float:
    """Pushes ``n_points`` metric points through a tracker and returns delivered points/s.

    The time covers enqueueing plus delivery until the flusher has drained (experiment and
    parent-run creation excluded). Each trial reports ``metrics_per_report`` metrics per step.
    """
    with tempfile.TemporaryDirectory() as tmp:
        tracker = SweepTracker(
            tracking_uri=tracking_uri,
            sweep_name=f"bench-{time.time_ns()}",
            storage_dir=Path(tmp),
            metric="m0",
            mode="min",
        )
        tracker.start()
        trials = [_FakeTrial(f"bench_{i:05d}") for i in range(n_trials)]
        steps = max(1, n_points // (n_trials * metrics_per_report))
        begin = time.perf_counter()
        for trial in trials:
            tracker.trial_added(trial)
        for step in range(1, steps + 1):
            for trial in trials:
                result = {f"m{j}": step * 0.5 + j for j in range(metrics_per_report)}
                result[ITERATION_KEY] = step
                tracker.trial_reported(trial, result)
        assert tracker._flusher is not None
        tracker._flusher.drain(600)
        elapsed = time.perf_counter() - begin
        delivered = tracker._flusher.delivered_points
        tracker.finish()
        return delivered / elapsed
