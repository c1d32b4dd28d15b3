"""How much of each epoch a trial spends waiting for its data loader.

A slow input pipeline is the most common reason a trial trains slowly, and it hides well: the
loss curves look normal, only slower. Every loader that ``ray.train.torch.prepare_data_loader``
returns (with its default ``move_to_device=True``) is a ``_WrappedDataLoader`` that fetches each
batch synchronously in ``_prefetch_next_batch``. The process-wide patch below times those
fetches, and each ``ray.train.report`` adds :data:`~sweeplab.keys.DATA_WAIT_KEY`: the seconds
spent fetching since the previous report, over the seconds elapsed since the first fetch after it.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

from sweeplab.keys import DATA_WAIT_KEY

__all__ = [
    "DATA_WAIT_WARN",
    "METER",
    "MeasureDataWait",
    "WaitMeter",
    "install",
    "with_data_wait",
]

# Above this fraction, data loading dominates the epoch and the sweep's output says so.
DATA_WAIT_WARN = 0.5


class WaitMeter:
    """Seconds spent fetching batches since the last report, and when that window began."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.waited = 0.0
        self.window_start: float | None = None
        self.active = 0  # loader iterations in progress

    def reset(self) -> None:
        """Forgets everything: a new trial starts (a reused trial actor runs several)."""
        with self._lock:
            self.waited = 0.0
            self.window_start = None
            self.active = 0

    def begin(self) -> None:
        with self._lock:
            self.active += 1
            if self.window_start is None:
                self.window_start = self._clock()

    def end(self) -> None:
        with self._lock:
            self.active = max(0, self.active - 1)

    def add(self, seconds: float) -> None:
        with self._lock:
            if self.window_start is None:
                self.window_start = self._clock() - seconds
            self.waited += seconds

    def take(self) -> float | None:
        """The fraction of the window spent waiting, and a new window; None if no data came."""
        with self._lock:
            if self.window_start is None:
                return None
            now = self._clock()
            elapsed = now - self.window_start
            fraction = min(1.0, self.waited / elapsed) if elapsed > 0 else 0.0
            self.waited = 0.0
            # A loop that reports in the middle of an epoch goes on with the same iterator.
            self.window_start = now if self.active else None
            return fraction


METER = WaitMeter()
_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def install() -> None:
    """Times the batch fetches of every prepared data loader in this process (idempotent)."""
    global _INSTALLED
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        from sweeplab.raycompat import time_prepared_loader_fetches

        def on_fetch(seconds: float, exhausted: bool) -> None:
            METER.add(seconds)
            if exhausted:
                METER.end()

        time_prepared_loader_fetches(on_epoch_start=METER.begin, on_fetch=on_fetch)
        _INSTALLED = True


def with_data_wait(metrics: dict[str, Any]) -> dict[str, Any]:
    """`metrics` plus this window's data-wait fraction, when a prepared loader was iterated."""
    fraction = METER.take()
    if fraction is None or DATA_WAIT_KEY in metrics:
        return metrics
    return {**metrics, DATA_WAIT_KEY: round(fraction, 4)}


class MeasureDataWait:
    """A worker function that times its prepared data loaders and reports the fraction."""

    def __init__(self, train_func: Callable[..., Any]) -> None:
        self.train_func = train_func
        self.takes_config = bool(inspect.signature(train_func).parameters)

    def __call__(self, config: dict[str, Any]) -> Any:
        from sweeplab.raycompat import transform_reported_metrics

        install()
        METER.reset()
        transform_reported_metrics(with_data_wait)
        return self.train_func(config) if self.takes_config else self.train_func()
