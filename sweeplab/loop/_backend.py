"""The boundary between the trial loop and what trains trials: a backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sweeplab.loop._trial import LoopTrial

__all__ = ["BackendReport", "TrialBackend"]


@dataclasses.dataclass(frozen=True)
class BackendReport:
    """One report of a trial, as its backend hands it to the loop.

    Attributes:
        trial: The trial that reported.
        metrics: What it reported for its next iteration.
        seconds: How long that iteration took.
        time_s: When the report arrived, in seconds since the sweep started (the backend's
            clock: simulated or wall).
        returned: The training function returned before the loop ended the trial (it
            reported no iteration: `metrics` is empty).
        error: The training function failed: what it raised (it reported no iteration).
    """

    trial: LoopTrial
    metrics: Mapping[str, Any]
    seconds: float
    time_s: float
    returned: bool = False
    error: str | None = None

    @classmethod
    def ended(cls, trial: LoopTrial, time_s: float, *, error: str | None = None) -> BackendReport:
        """The report that `trial`'s training function ended by itself: it returned, or
        (`error` given) it failed."""
        return cls(trial, {}, 0.0, time_s, returned=error is None, error=error)


class TrialBackend(Protocol):
    """What trains the loop's trials: the simulated clock, or Ray.

    The loop decides; the backend trains. A trial trains one iteration at a time: the loop
    asks for it (`train`), the backend reports it (`next_report`), and the loop then asks
    for the next iteration, or does not (the trial paused or ended). Syne Tune's
    ``TrialBackend`` draws the same line (start, pause, resume, stop, fetch results, copy a
    checkpoint).
    """

    def train(self, trial: LoopTrial, iteration: int) -> None:
        """Has `trial` train `iteration` (1-based): a first one starts it, one after a pause
        resumes it from the checkpoint of its last report, any other continues it."""
        ...

    def next_report(self) -> BackendReport | None:
        """The next report in arrival order, or None when no trial is training.

        A training function that returns or fails while the loop waits for its next
        iteration is reported too (`BackendReport.ended`)."""
        ...

    def end(self, trial: LoopTrial) -> None:
        """`trial` trains no more for now (paused) or for good (ended): the backend frees
        what it holds for it and drops a report of it still on its way."""
        ...

    def copy_checkpoint(self, donor: LoopTrial, trial: LoopTrial) -> None:
        """PBT's exploit: `trial`, paused or pausing, goes on (at its next ``train``) from a
        copy of `donor`'s latest checkpoint instead of its own, with the config the loop
        has given it. `donor` is paused at its last report."""
        ...
