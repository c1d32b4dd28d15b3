"""HyperBand and synchronous PBT that no early-ending trial can stall (imported with Ray)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.tune.schedulers import HyperBandScheduler, TrialScheduler

__all__ = ["HyperBand", "ResumeWhenStalled"]

# Trials that hold a trial actor or wait for one.
_BUSY = ("RUNNING", "PENDING")


class ResumeWhenStalled:
    """Mixin for schedulers that pause trials until others reach the same point.

    Synchronous HyperBand and synchronous PBT act only when a trial reports: the last trial to
    reach a rung (or a perturbation round) halves the bracket (or runs the round) and resumes
    the paused ones. A trial whose ``train_func`` returns before that point never reports it,
    and the trials paused for it would wait forever. When every live trial is paused and the
    scheduler has none to run, the last result of a paused trial is replayed: with the early
    trial gone, that result completes the rung and the scheduler decides as it would have.

    With ``max_running`` (the sweep's concurrency), a paused trial is resumed only while fewer
    trials run or wait to start. Tune keeps a paused trial's actor for reuse only if a resumed
    trial waits for one; it resumes a single trial at a time and, for a trial it cannot hand
    a kept actor, starts a new process that a pause a moment later makes redundant. Bounded,
    each resume takes the actor of the trial that just paused: a resume costs milliseconds,
    not a process start (a PBT sweep of the benchmark's simulator spent most of its time so).
    """

    def __init__(self, *, max_running: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_running = max_running
        self.on_pause: Callable[[str], None] | None = None

    def set_pause_hook(self, on_pause: Callable[[str], None] | None) -> None:
        """Tells `on_pause(trial_id)` of each trial this scheduler pauses, when it decides so.

        The engine frees a paused trial's warm slot so: Tune keeps the paused trial's actor
        waiting in its report, which would go on holding the slot.
        """
        self.on_pause = on_pause

    def told_of_pause(self, trial: Any, decision: str) -> str:
        """`decision`, the final one for `trial`'s result; a pause is told to the hook."""
        on_pause = getattr(self, "on_pause", None)  # a scheduler pickled before the hook
        if decision == TrialScheduler.PAUSE and on_pause is not None:
            on_pause(trial.trial_id)
        return decision

    def choose_trial_to_run(self, tune_controller: Any) -> Any:
        if self.max_running is not None:
            busy = sum(1 for t in tune_controller.get_trials() if t.status in _BUSY)
            if busy >= self.max_running:
                return None
        trial = super().choose_trial_to_run(tune_controller)  # type: ignore[misc]
        if trial is not None:
            return trial
        live = list(tune_controller.get_live_trials())
        if not live or any(t.status != "PAUSED" for t in live):
            return None
        for paused in live:
            if paused.status == "PAUSED" and paused.last_result:
                self.on_trial_result(tune_controller, paused, dict(paused.last_result))  # type: ignore[attr-defined]
                trial = super().choose_trial_to_run(tune_controller)  # type: ignore[misc]
                if trial is not None:
                    return trial
        return None


class HyperBand(ResumeWhenStalled, HyperBandScheduler):
    """Tune's synchronous HyperBand, unstalled when a trial ends before its rung.

    Its brackets are Tune's: sized from ``max_t`` and filled in the order trials are created,
    smallest halving first. The engine creates every trial of such a sweep up front (see
    `tune_trial_limit`), so the brackets hold the trials that `hyperband_brackets` plans from
    ``num_trials``, not only those running at once.
    """

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        decision = str(super().on_trial_result(tune_controller, trial, result))
        return self.told_of_pause(trial, decision)
