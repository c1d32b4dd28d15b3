"""The Ray Tune callback that feeds a :class:`SweepTracker` (imports Ray, so loaded lazily)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sweeplab.engine._callbacks import SweepCallback, TrialView
from sweeplab.engine._tune_events import TuneEvents

if TYPE_CHECKING:
    from sweeplab.tracking._tracker import SweepTracker


class TrackerEvents(SweepCallback):
    """The sweep's trial events, recorded by a tracker; runs on the driver, never blocks on I/O.

    The tracker reads Tune's own record of each trial (its config as Tune holds it, its
    folder for a resumed sweep's backfill, its error file), so its MLflow data stay those of
    the Tune trial.
    """

    def __init__(self, tracker: SweepTracker) -> None:
        self._tracker: Any = tracker

    def on_trial_add(self, trial: TrialView) -> None:
        self._tracker._register(trial._tune_trial)

    def on_trial_start(self, trial: TrialView) -> None:
        self._tracker._on_start(trial._tune_trial)

    def on_trial_retry(self, trial: TrialView) -> None:
        self._tracker._on_recover(trial._tune_trial)

    def on_trial_result(self, trial: TrialView, result: Mapping[str, Any]) -> None:
        self._tracker._on_result(trial._tune_trial, result)

    # The tracker tells a stopped trial from a complete one itself, from what it recorded
    # (a resumed sweep's earlier results included).
    def on_trial_complete(self, trial: TrialView) -> None:
        self._tracker._on_complete(trial._tune_trial)

    def on_trial_stop(self, trial: TrialView) -> None:
        self._tracker._on_complete(trial._tune_trial)

    def on_trial_error(self, trial: TrialView) -> None:
        self._tracker._on_error(trial._tune_trial)


class MlflowTrialCallback(TuneEvents):
    """Tune's callback for a tracker used with plain Ray Tune (``tracker.tune_callback()``)."""

    def __init__(self, tracker: SweepTracker) -> None:
        super().__init__([TrackerEvents(tracker)], max_iterations=tracker.max_iterations)

    # Tune pickles its RunConfig (callbacks included) into the experiment folder. The tracker
    # holds threads and clients, so a restored copy of this callback is inert: a resumed sweep
    # passes a fresh ``tracker.tune_callback()`` instead (see docs/tracking.md).
    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        TuneEvents.__init__(self, [])
