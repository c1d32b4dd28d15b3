"""When a sweep's silence is a stall: the watchdog's decision, free of Ray (see `_watchdog`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from sweeplab.keys import ITERATION_KEY

__all__ = ["STALL_FACTOR", "STALL_FLOOR_S", "StallClock", "SweepStalled", "describe_trials"]

# The adaptive limit: at least this long, and this many times the longest silence seen.
STALL_FLOOR_S = 120.0
STALL_FACTOR = 3.0


class SweepStalled(RuntimeError):
    """The sweep was silent past its stall limit and ``fail_on_stall`` was set (exit 1)."""


@dataclasses.dataclass
class StallClock:
    """When a sweep's silence becomes a stall: the watchdog's decision, free of Ray.

    Args:
        timeout_s: The fixed limit; None: ``max(floor_s, factor x the longest silence seen)``.
        floor_s: The least adaptive limit.
        factor: The adaptive limit's multiple of the longest silence seen.
        started: When the watch began (a monotonic time): the first silence runs from here.
    """

    timeout_s: float | None = None
    floor_s: float = STALL_FLOOR_S
    factor: float = STALL_FACTOR
    started: float = 0.0
    _last: float = dataclasses.field(init=False)
    _longest: float = dataclasses.field(init=False, default=0.0)
    _told: bool = dataclasses.field(init=False, default=False)

    def __post_init__(self) -> None:
        self._last = self.started

    @property
    def limit_s(self) -> float:
        """How long a silence may last before it is a stall."""
        if self.timeout_s is not None:
            return self.timeout_s
        return max(self.floor_s, self.factor * self._longest)

    def restart(self, now: float) -> None:
        """The watch begins at `now` (the sweep's trials start): no silence counted before."""
        self._last = now
        self._told = False

    def activity(self, now: float) -> None:
        """A trial reported, started or ended at `now`: the silence ends."""
        self._longest = max(self._longest, now - self._last)
        self._last = now
        self._told = False

    def silence_s(self, now: float) -> float:
        return now - self._last

    def stalled(self, now: float) -> bool:
        """Whether the silence has just passed the limit: True once per silence."""
        if self._told or self.silence_s(now) < self.limit_s:
            return False
        self._told = True
        return True


def describe_trials(trials: Iterable[Any], now: float, last_report: dict[str, float]) -> list[str]:
    """One phrase per unfinished trial: its id, status, iteration and last report's age."""
    phrases = []
    for trial in trials:
        if trial.status in ("TERMINATED", "ERROR"):
            continue
        result = trial.last_result if trial.status != "PENDING" else {}
        iteration = (result or {}).get(ITERATION_KEY) or 0
        seen = last_report.get(trial.trial_id)
        age = "no report yet" if seen is None else f"last report {now - seen:.0f}s ago"
        phrases.append(f"{trial.trial_id} {trial.status} at iteration {iteration}, {age}")
    return phrases
