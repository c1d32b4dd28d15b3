"""Egele et al. (2023)'s cheap baseline as a Tune scheduler: train every trial ``k`` iterations,
then let only the top third of those seen at ``k`` train to the end.

Egele, Guyon, Vishwanath & Balaprakash, "Is One Epoch All You Need For Multi-Fidelity
Hyperparameter Optimization?" (ESANN 2023): ranking configs after a few epochs and training only
the best ones fully matches many multi-fidelity methods. Their rule is synchronous (all configs
first, then the top k); trials here arrive one after another, so the rule is applied as each
trial reaches ``k``, against every trial that reached ``k`` before it, as ASHA's single rung is.
"""

from __future__ import annotations

import math
from typing import Any

from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from sweeplab import SchedulerTraits

__all__ = ["TopKScheduler", "topk_iterations"]


def topk_iterations(max_iterations: int) -> int:
    """The ``k`` of a problem: ``max_iterations / 9`` rounded, at least 1 (3 of 27, 6 of 52)."""
    return max(1, round(max_iterations / 9))


class TopKScheduler(FIFOScheduler):
    """Stops a trial at iteration ``k`` unless it ranks in the top ``keep`` share so far.

    At its report of iteration ``k``, a trial's value joins the ``n`` values seen at ``k`` (its
    own included). It continues if at most ``ceil(keep * n) - 1`` of them are strictly better,
    that is, if its rank (ties counted in its favour) is within ``ceil(keep * n)``: the first
    trial always continues, the second only if it beats the first, and so on. It never pauses a
    trial, and it decides nothing at any other iteration (the training function ends each
    trial at ``max_iterations``).

    Args:
        k: The iteration at which trials are ranked (>= 1).
        keep: The share that continues, in (0, 1]; a third by default.
        time_attr: The result field that counts iterations.
        metric, mode: Left None: the sweep passes its own (``set_search_properties``).

    Raises:
        ValueError: If ``k`` or ``keep`` is out of range.
    """

    sweeplab_traits = SchedulerTraits(pauses=False, exploits=False)

    def __init__(
        self,
        *,
        k: int,
        keep: float = 1 / 3,
        time_attr: str = "training_iteration",
        metric: str | None = None,
        mode: str | None = None,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"`k >= 1` must hold for an integer k, but got {k=}.")
        if not 0 < keep <= 1:
            raise ValueError(f"`0 < keep <= 1` must hold, but got {keep=}.")
        super().__init__()
        self.k = k
        self.keep = keep
        self.time_attr = time_attr
        self._metric = metric
        self._mode = mode
        self.seen: list[float] = []  # values at k, signed so that lower is better
        self.stopped: list[str] = []  # ids of the trials it stopped, in order

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        if (self._metric and metric) or (self._mode and mode):
            return False
        if metric:
            self._metric = metric
        if mode:
            self._mode = mode
        return True

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        if result.get(self.time_attr) != self.k:
            return TrialScheduler.CONTINUE
        if self._metric is None or self._mode not in ("min", "max"):
            raise ValueError(
                "TopKScheduler needs a metric and a mode of 'min' or 'max', but got "
                f"metric={self._metric!r}, mode={self._mode!r}."
            )
        value = float(result[self._metric])
        signed = value if self._mode == "min" else -value
        if math.isnan(signed):
            signed = math.inf
        self.seen.append(signed)
        allowed = math.ceil(self.keep * len(self.seen))
        better = sum(1 for other in self.seen if other < signed)
        if better < allowed:
            return TrialScheduler.CONTINUE
        self.stopped.append(trial.trial_id)
        return TrialScheduler.STOP

    def debug_string(self) -> str:
        return f"Top-k: at iteration {self.k}, the top {self.keep:.0%} so far continue."
