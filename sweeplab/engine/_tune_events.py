"""The one adapter from Ray Tune's callback events to sweeplab's :class:`SweepCallback`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ray.tune import Callback

from sweeplab.engine._callbacks import SweepCallback, TrialView
from sweeplab.engine._divergence import diverged

__all__ = ["TuneEvents"]


class TuneEvents(Callback):
    """A Tune callback that tells `callbacks` of each trial's events as :class:`TrialView`\\ s.

    Tune has one ``on_trial_complete`` for a trial that ended by itself and for one that the
    scheduler stopped; this adapter tells them apart. Tune marks a result ``done`` when, at that
    result, the scheduler (or a stopper) decided to stop the trial, while a trainable that
    returned by itself gets its last result marked ``done`` only afterwards. ASHA also "stops" a
    trial that reached its budget, so a trial at ``max_iterations`` counts as complete (both
    measured with a real ASHA run). A trial whose last report's metric is NaN or infinite was
    stopped by sweeplab's divergence stopper: it is told as a stop, with status ``"DIVERGED"``.

    Args:
        callbacks: The sweep callbacks, called in order.
        max_iterations: The budget of one trial, when the sweep has one.
        metric: The sweep's metric, whose NaN or infinite value marks a diverged trial.
        decode: Turns Tune's config into the training function's (``TrialView.config``).
    """

    def __init__(
        self,
        callbacks: Iterable[SweepCallback],
        *,
        max_iterations: int | None = None,
        decode: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        metric: str | None = None,
    ) -> None:
        self._callbacks = list(callbacks)
        self._metric = metric
        self._max_iterations = max_iterations
        self._decode = decode
        self._added: set[str] = set()
        self._latest: dict[str, Mapping[str, Any]] = {}
        self._stopped_at_result: dict[str, bool] = {}

    def _view(self, trial: Any, status: str, error: str | None = None) -> TrialView:
        metrics = self._latest.get(trial.trial_id)
        if metrics is None:
            # A trial of a resumed sweep that reported before this process started. A pending
            # trial's `last_result` would ask its (absent) actor for default metrics.
            metrics = {} if trial.status == "PENDING" else dict(trial.last_result or {})
        return TrialView(
            trial_id=trial.trial_id,
            config=trial.config,
            status=status,
            iteration=int(metrics.get("training_iteration") or 0),
            metrics=metrics,
            path=trial.local_path,
            error=error,
            decode=self._decode,
            tune_trial=trial,
        )

    def _add(self, trial: Any) -> None:
        if trial.trial_id in self._added:
            return
        self._added.add(trial.trial_id)
        view = self._view(trial, trial.status)
        for callback in self._callbacks:
            callback.on_trial_add(view)

    def on_step_begin(self, iteration: int, trials: list[Any], **info: Any) -> None:
        for trial in trials:
            self._add(trial)

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._add(trial)
        view = self._view(trial, "RUNNING")
        for callback in self._callbacks:
            callback.on_trial_start(view)

    def on_trial_restore(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.on_trial_start(iteration, trials, trial)

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._add(trial)
        view = self._view(trial, "PENDING")
        for callback in self._callbacks:
            callback.on_trial_retry(view)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict, **info: Any
    ) -> None:
        self._add(trial)
        self._latest[trial.trial_id] = result
        self._stopped_at_result[trial.trial_id] = bool(result.get("done"))
        view = self._view(trial, "RUNNING")
        for callback in self._callbacks:
            callback.on_trial_result(view, result)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._add(trial)
        view = self._view(trial, "TERMINATED")
        if self._metric is not None and diverged(view.metrics, self._metric):
            view.status = "DIVERGED"
            for callback in self._callbacks:
                callback.on_trial_stop(view)
            return
        reached = self._max_iterations is not None and view.iteration >= self._max_iterations
        if self._stopped_at_result.get(trial.trial_id, False) and not reached:
            view.status = "STOPPED"
            for callback in self._callbacks:
                callback.on_trial_stop(view)
            return
        for callback in self._callbacks:
            callback.on_trial_complete(view)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._add(trial)
        view = self._view(trial, "ERROR", error=_error_text(trial))
        for callback in self._callbacks:
            callback.on_trial_error(view)


def _error_text(trial: Any) -> str | None:
    try:
        if trial.error_file and Path(trial.error_file).exists():
            return Path(trial.error_file).read_text(errors="replace")
    except OSError:
        pass
    return None
