"""Sweep callbacks: the public way to watch a running sweep (no Ray import here)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sweeplab.engine._outcome import SweepOutcome

__all__ = ["SweepCallback", "TrialView"]


class TrialView:
    """One trial of a running sweep, as a :class:`SweepCallback` sees it at an event.

    A snapshot: the next event brings a new view. Only these attributes are stable; the Ray Tune
    trial behind a view is not part of sweeplab's API.

    Attributes:
        trial_id: Tune's id of the trial (also its MLflow run name and ``sweeplab.trial_id``).
        status: ``"PENDING"``, ``"RUNNING"``, ``"PAUSED"``, ``"TERMINATED"`` (ran to its end),
            ``"STOPPED"`` (stopped early by the scheduler), ``"DIVERGED"`` (stopped at its first
            report whose metric is NaN or infinite) or ``"ERROR"``.
        iteration: Reports so far (Tune's ``training_iteration``); 0 before the first.
        metrics: The trial's latest report (empty before the first).
        path: The trial's local folder (Tune's ``result.json``, error files), if any.
        error: The error's text as Tune recorded it, on an error event; else None.
    """

    __slots__ = (
        "_config",
        "_decode",
        "error",
        "iteration",
        "metrics",
        "path",
        "status",
        "trial_id",
    )

    def __init__(
        self,
        *,
        trial_id: str,
        config: Mapping[str, Any],
        status: str,
        iteration: int = 0,
        metrics: Mapping[str, Any] | None = None,
        path: str | None = None,
        error: str | None = None,
        decode: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.trial_id = trial_id
        self.status = status
        self.iteration = iteration
        self.metrics: Mapping[str, Any] = dict(metrics or {})
        self.path = path
        self.error = error
        self._config = dict(config)
        self._decode = decode

    @property
    def config(self) -> dict[str, Any]:
        """The config the training function gets (conditional choices as nested dicts).

        Decoded on access: most callbacks never read it, and a sweep's results come often.
        """
        return self._decode(dict(self._config)) if self._decode else dict(self._config)

    def __repr__(self) -> str:
        return (
            f"TrialView(trial_id={self.trial_id!r}, status={self.status!r}, "
            f"iteration={self.iteration})"
        )


class SweepCallback:
    """Watches a sweep: subclass it, override the events you need, pass it in ``SweepOptions``.

    Every method is a no-op here. They run on the sweep's driver, in Tune's loop, one at a time:
    keep them quick (a slow callback slows the whole sweep), and do not raise (an exception
    ends the sweep).

    For each trial the events come in this order: ``on_trial_add`` once, then
    ``on_trial_start`` (again after a pause or a retry), ``on_trial_result`` per report (under
    PBT, ``on_trial_exploit`` when the trial takes over another's config and weights), and at
    the end exactly one of ``on_trial_complete``, ``on_trial_stop`` or ``on_trial_error``
    (``on_trial_retry`` instead, when the trial fails and will be retried). ``on_sweep_end``
    comes once, after the last trial ended and the sweep was ranked.

    Example::

        class PrintBest(sweeplab.SweepCallback):
            def on_sweep_end(self, outcome):
                print(outcome.best)

        sweeplab.run_sweep(sweep, sweeplab.SweepOptions(callbacks=[PrintBest()]))
    """

    def on_trial_add(self, trial: TrialView) -> None:
        """The sweep learned of a trial: sampled, or found in the state of a resumed sweep."""

    def on_trial_start(self, trial: TrialView) -> None:
        """The trial started, or resumed after a pause, a retry or a resumed sweep."""

    def on_trial_result(self, trial: TrialView, result: Mapping[str, Any]) -> None:
        """The trial reported ``result`` (its metrics, with Tune's ``training_iteration``)."""

    def on_trial_complete(self, trial: TrialView) -> None:
        """The trial ended by itself or at the sweep's ``max_iterations``."""

    def on_trial_stop(self, trial: TrialView) -> None:
        """The trial was stopped early: by the scheduler (ASHA, median stopping, HyperBand...),
        or, with ``trial.status == "DIVERGED"``, at its first NaN or infinite metric."""

    def on_trial_exploit(self, trial: TrialView, donor_id: str) -> None:
        """PBT replaced the trial's config and weights with those of trial `donor_id`;
        ``trial.config`` is the new config, ``trial.iteration`` where it takes over."""

    def on_trial_retry(self, trial: TrialView) -> None:
        """The trial failed and will restart from its latest checkpoint (``max_failures``)."""

    def on_trial_error(self, trial: TrialView) -> None:
        """The trial failed for good; ``trial.error`` holds the error's text."""

    def on_sweep_end(self, outcome: SweepOutcome) -> None:
        """The sweep ended and was ranked (not called when it raised or was interrupted)."""
