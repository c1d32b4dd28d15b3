"""HyperBand that no early-ending trial can stall (imported with Ray)."""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import HyperBandScheduler

__all__ = ["HyperBand", "ResumeWhenStalled"]

# Trials that hold a trial actor or wait for one.
_BUSY = ("RUNNING", "PENDING")


class ResumeWhenStalled:
    """Mixin for schedulers that pause trials until others reach the same point.

    Synchronous HyperBand acts only when a trial reports: the last trial to reach a rung halves
    the bracket and resumes the paused ones. A trial whose ``train_func`` returns before that
    point never reports it, and the trials paused for it would wait forever. When every live
    trial is paused and the scheduler has none to run, the last result of a paused trial is
    replayed: with the early trial gone, that result completes the rung and the scheduler
    decides as it would have.

    With ``max_running`` (the sweep's concurrency), a paused trial is resumed only while fewer
    trials run or wait to start: each resume takes the place of the trial that just paused
    (under Tune's controller, where this began, a resume beyond them started a new process).
    """

    def __init__(self, *, max_running: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_running = max_running

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
