"""HyperBand and synchronous PBT that no early-ending trial can stall (imported with Ray)."""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import HyperBandScheduler

__all__ = ["HyperBand", "ResumeWhenStalled"]


class ResumeWhenStalled:
    """Mixin for schedulers that pause trials until others reach the same point.

    Synchronous HyperBand and synchronous PBT act only when a trial reports: the last trial to
    reach a rung (or a perturbation round) halves the bracket (or runs the round) and resumes
    the paused ones. A trial whose ``train_func`` returns before that point never reports it,
    and the trials paused for it would wait forever. When every live trial is paused and the
    scheduler has none to run, the last result of a paused trial is replayed: with the early
    trial gone, that result completes the rung and the scheduler decides as it would have.
    """

    def choose_trial_to_run(self, tune_controller: Any) -> Any:
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
