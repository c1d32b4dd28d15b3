"""ASHA whose first rungs stop trials only once they are seen to keep the best ones.

On real learning curves the first epoch often ranks configs no better than chance (on YAHPO's
LCBench surrogate the final best 5 % of configs are in epoch 1's top third on some tasks and
never on others), so ASHA's grace period of 1 either finds good configs fastest or throws the
best away. `AdaptiveASHA` learns which, from the sweep itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sweeplab.errors import SpecError
from sweeplab.pareto import Objective
from sweeplab.strategies._mo_asha import CONTINUE, STOP, MultiObjectiveASHA, ScalarRung

__all__ = ["AdaptiveASHA"]


class AdaptiveASHA(MultiObjectiveASHA):
    """ASHA (one objective) whose rungs below `trusted_from` start on probation.

    The rungs are those of ASHA with grace period 1: ``reduction_factor ** k`` up to `max_t`. A
    rung at or above `trusted_from` judges trials as Tune's ASHA does. A rung below it is *on
    probation*: it records every trial's value there but stops none, until the sweep shows
    that its cut keeps the best trials:

    - the reference is the highest rung above it where at least `evidence` trials that also
      reported at the probation rung are recorded;
    - the probation rung is *trusted* (it judges every later trial, as ASHA) when each of the
      reference's best `evidence` trials has a value at the probation rung that ASHA would have
      continued: not below the ``1 - 1 / reduction_factor`` percentile of the values recorded
      there now.

    Trust is checked each time a trial is recorded at a rung above a probation rung, and once
    given it stays. If the first rung does rank the best configs early, the sweep soon cuts
    there, as ASHA with grace period 1; if it does not, the trials pass it, as ASHA with grace
    period `trusted_from`. Were the rung no better than chance, the reference's best
    `evidence` trials would each be kept with probability ``1 / reduction_factor``, so all of
    them with about ``(1 / 3) ** 5`` = 0.4 % at the defaults.

    Args:
        objectives: One objective (its name is the scheduler's metric).
        time_attr: The result's attribute that measures progress; it must increase.
        max_t: The progress at which every trial stops.
        reduction_factor: The rungs' spacing, and the inverse of the share that continues.
        trusted_from: The first rung trusted from the start; rungs below it are on probation.
            Default: `reduction_factor` (the second rung), or `max_t` where that is smaller
            (a short sweep's first rung is still on probation; ``max_t=1`` has none).
        evidence: The reference's trials checked before a probation rung is trusted.

    Raises:
        SpecError: If an argument breaks its rule.
    """

    def __init__(
        self,
        *,
        objectives: Sequence[Objective],
        time_attr: str = "training_iteration",
        max_t: int = 100,
        reduction_factor: float = 3,
        trusted_from: float | None = None,
        evidence: int = 5,
    ) -> None:
        if len(tuple(objectives)) != 1:
            raise SpecError(f"AdaptiveASHA takes one objective, but got {len(tuple(objectives))}.")
        super().__init__(
            objectives=objectives,
            time_attr=time_attr,
            max_t=max_t,
            grace_period=1,
            reduction_factor=reduction_factor,
        )
        trusted_from = min(reduction_factor, max_t) if trusted_from is None else trusted_from
        if not 1 <= trusted_from <= max_t:
            raise SpecError(
                f"`1 <= trusted_from <= max_t` must hold, but got ({trusted_from=}, {max_t=})."
            )
        if isinstance(evidence, bool) or not (isinstance(evidence, int) and evidence >= 1):
            raise SpecError(f"`evidence` must be an integer >= 1, but got {evidence=}.")
        self.evidence = evidence
        self.trusted_from = trusted_from
        self._probation = {r.milestone for r in self._rungs if r.milestone < trusted_from}
        self.trusted: dict[float, int] = {}  # milestone -> trials recorded there when trusted

    @property
    def on_probation(self) -> list[float]:
        """The milestones of the rungs still on probation, lowest first."""
        return sorted(self._probation)

    def debug_string(self) -> str:
        probation = ", ".join(f"{m:g}" for m in self.on_probation) or "none"
        return f"{super().debug_string()}\nOn probation: {probation}"

    def _on_rung_result(self, trial_id: str, result: Mapping[str, Any]) -> str:
        progress = result[self._time_attr]
        for rung in self._rungs:  # highest first
            if progress < rung.milestone or trial_id in rung.judged:
                continue
            stop = rung.judge(trial_id, result, self._quantile)
            if rung.milestone in self._probation:
                stop = False
            elif self._probation and rung.milestone > min(self._probation):
                self._review()
            return STOP if stop else CONTINUE
        return CONTINUE

    def _review(self) -> None:
        """Trusts each probation rung whose cut would have kept the reference's best trials."""
        rungs = [r for r in self._rungs if isinstance(r, ScalarRung)]
        for rung in rungs:
            if rung.milestone not in self._probation or not rung.judged:
                continue
            scores = rung.judged
            cutoff = np.nanpercentile(list(scores.values()), self._quantile)
            for reference in rungs:  # highest first
                if reference.milestone <= rung.milestone:
                    break
                both = [(s, t) for t, s in reference.judged.items() if t in scores and s == s]
                if len(both) < self.evidence:
                    continue
                best = sorted(both, reverse=True)[: self.evidence]
                if all(scores[t] >= cutoff for _, t in best):
                    self._probation.discard(rung.milestone)
                    self.trusted[rung.milestone] = len(scores)
                break
