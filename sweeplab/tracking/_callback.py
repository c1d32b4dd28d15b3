"""The Ray Tune callback that feeds a :class:`SweepTracker` (imports Ray, so loaded lazily)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ray.tune import Callback

if TYPE_CHECKING:
    from sweeplab.tracking._tracker import SweepTracker


class MlflowTrialCallback(Callback):
    """Forwards Tune's trial events to a tracker; runs on the driver and never blocks on I/O."""

    def __init__(self, tracker: SweepTracker) -> None:
        self._tracker: Any = tracker

    # Tune pickles its RunConfig (callbacks included) into the experiment folder. The tracker
    # holds threads and clients, so a restored copy of this callback is inert: a resumed sweep
    # passes a fresh ``tracker.tune_callback()`` instead (see docs/tracking.md).
    def __getstate__(self) -> dict[str, Any]:
        return {"_tracker": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._tracker = _Inert()

    def on_step_begin(self, iteration: int, trials: list[Any], **info: Any) -> None:
        for trial in trials:
            self._tracker._register(trial)

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._tracker._on_start(trial)

    def on_trial_restore(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._tracker._on_start(trial)

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._tracker._on_recover(trial)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict, **info: Any
    ) -> None:
        self._tracker._on_result(trial, result)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._tracker._on_complete(trial)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._tracker._on_error(trial)


class _Inert:
    """Stands in for the tracker in an unpickled callback: ignores every event."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None
