"""The Ray Tune callback that feeds a :class:`SweepTracker` in plain Ray Tune (imports Ray).

``sweeplab sweep`` does not use it: the engine's own Tune callback calls the tracker's event
interface directly, with the live table and the sweep callbacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ray.tune import Callback

from sweeplab.raycompat import NewTrials, trial_error_text

if TYPE_CHECKING:
    from sweeplab.tracking._tracker import SweepTracker

__all__ = ["MlflowTrialCallback"]


class MlflowTrialCallback(Callback):
    """Tune's callback for a tracker used with plain Ray Tune (``tracker.tune_callback()``).

    Tune pickles its RunConfig (callbacks included) into the experiment folder. The tracker
    holds threads and clients, so a restored copy of this callback is inert: a resumed sweep
    passes a fresh ``tracker.tune_callback()`` instead (see docs/tracking.md).
    """

    def __init__(self, tracker: SweepTracker | None) -> None:
        self._tracker = tracker
        self._new = NewTrials()

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._tracker = None
        self._new = NewTrials()

    def on_step_begin(self, iteration: int, trials: list[Any], **info: Any) -> None:
        for trial in self._new.since_last(trials):
            if self._tracker is not None:
                self._tracker.trial_added(trial)

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        if self._tracker is not None:
            self._tracker.trial_started(trial)

    def on_trial_restore(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.on_trial_start(iteration, trials, trial)

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        if self._tracker is not None:
            self._tracker.trial_retried(trial)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: Mapping[str, Any], **info: Any
    ) -> None:
        if self._tracker is not None:
            self._tracker.trial_reported(trial, result)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        if self._tracker is not None:
            self._tracker.trial_ended(trial)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        if self._tracker is not None:
            self._tracker.trial_failed(trial, trial_error_text(trial))
