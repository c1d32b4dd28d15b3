"""Each trial event of a sweep, told to the tracker and the sweep callbacks.

A result travels one path: the trial loop's observer (`sweeplab.engine._loop_sweep`) calls
`SweepEvents`, which tells the tracker (its own event interface,
:class:`sweeplab.tracking.SweepTracker`) and then each :class:`SweepCallback` (the live table,
then the callbacks of ``SweepOptions``). PBT's exploits take the same path
(`SweepEvents.on_trial_exploit`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from sweeplab._numbers import diverged
from sweeplab.engine._callbacks import SweepCallback, TrialView
from sweeplab.keys import ITERATION_KEY
from sweeplab.raycompat import trial_error_text

__all__ = ["SweepEvents", "TrialRecorder"]


class TrialRecorder(Protocol):
    """What records the trials' events: the MLflow tracker (`sweeplab.tracking.SweepTracker`),
    or an untracked sweep's in-memory ranking (`sweeplab.tracking.UntrackedRanking`)."""

    def trial_added(self, trial: Any) -> None: ...

    def trial_started(self, trial: Any) -> None: ...

    def trial_retried(self, trial: Any) -> None: ...

    def trial_reported(self, trial: Any, result: Mapping[str, Any]) -> None: ...

    def trial_ended(self, trial: Any) -> None: ...

    def trial_failed(self, trial: Any, error: str | None) -> None: ...

    def note_exploit(
        self, trial_id: str, donor_id: str, iteration: int, new_config: dict[str, Any]
    ) -> None: ...


class SweepEvents:
    """Tells the tracker and `callbacks` of each trial's events.

    The loop has one ``on_trial_complete`` for a trial that ended by itself and for one that
    the scheduler stopped; this tells them apart. A result is marked ``done`` when, at that
    result, the scheduler decided to stop the trial, while a training function that returned
    by itself gets its last result marked ``done`` only afterwards. ASHA also "stops" a
    trial that reached its budget, so a trial at ``max_iterations`` counts as complete (both
    measured with a real ASHA run). A trial whose last report's metric is NaN or infinite was
    stopped by sweeplab's divergence stopper: it is told as a stop, with status ``"DIVERGED"``.
    The tracker tells a stopped trial from a complete one itself, from what it recorded (a
    resumed sweep's earlier results included).

    Args:
        callbacks: The sweep callbacks, called in order.
        tracker: The sweep's MLflow tracker, told of each event before the callbacks.
        max_iterations: The budget of one trial, when the sweep has one.
        metric: The sweep's metric, whose NaN or infinite value marks a diverged trial.
        decode: Turns Tune's config into the training function's (``TrialView.config``).
    """

    def __init__(
        self,
        callbacks: Iterable[SweepCallback],
        *,
        tracker: TrialRecorder | None = None,
        max_iterations: int | None = None,
        decode: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        metric: str | None = None,
    ) -> None:
        self._callbacks = list(callbacks)
        self._tracker = tracker
        self._metric = metric
        self._max_iterations = max_iterations
        self._decode = decode
        self._trials: dict[str, Any] = {}
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
            iteration=int(metrics.get(ITERATION_KEY) or 0),
            metrics=metrics,
            path=trial.local_path,
            error=error,
            decode=self._decode,
        )

    def add_trial(self, trial: Any) -> None:
        """The sweep made `trial`."""
        self._add(trial)

    def _add(self, trial: Any) -> None:
        if trial.trial_id in self._trials:
            return
        self._trials[trial.trial_id] = trial
        if self._tracker is not None:
            self._tracker.trial_added(trial)
        view = self._view(trial, trial.status)
        for callback in self._callbacks:
            callback.on_trial_add(view)

    def on_trial_start(self, trial: Any) -> None:
        self._add(trial)
        if self._tracker is not None:
            self._tracker.trial_started(trial)
        view = self._view(trial, "RUNNING")
        for callback in self._callbacks:
            callback.on_trial_start(view)

    def on_trial_recover(self, trial: Any) -> None:
        self._add(trial)
        if self._tracker is not None:
            self._tracker.trial_retried(trial)
        view = self._view(trial, "PENDING")
        for callback in self._callbacks:
            callback.on_trial_retry(view)

    def on_trial_result(self, trial: Any, result: Mapping[str, Any]) -> None:
        self._add(trial)
        self._latest[trial.trial_id] = result
        self._stopped_at_result[trial.trial_id] = bool(result.get("done"))
        if self._tracker is not None:
            self._tracker.trial_reported(trial, result)
        view = self._view(trial, "RUNNING")
        for callback in self._callbacks:
            callback.on_trial_result(view, result)

    def on_trial_complete(self, trial: Any) -> None:
        self._add(trial)
        if self._tracker is not None:
            self._tracker.trial_ended(trial)
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

    def on_trial_error(self, trial: Any) -> None:
        self._add(trial)
        error = trial_error_text(trial)
        if self._tracker is not None:
            self._tracker.trial_failed(trial, error)
        view = self._view(trial, "ERROR", error=error)
        for callback in self._callbacks:
            callback.on_trial_error(view)

    def on_trial_exploit(
        self, trial_id: str, donor_id: str, iteration: int, config: dict[str, Any]
    ) -> None:
        """PBT replaced the trial's config (and weights) with the donor's, at `iteration`."""
        if self._tracker is not None:
            self._tracker.note_exploit(trial_id, donor_id, iteration, config)
        trial = self._trials.get(trial_id)
        if trial is None:
            return
        view = self._view(trial, "RUNNING")
        for callback in self._callbacks:
            callback.on_trial_exploit(view, donor_id)
