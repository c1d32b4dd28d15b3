"""The strategies compared: a searcher and a scheduler, and how many trials each gets."""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeplab import OptunaSearcher

__all__ = ["BASELINE", "NAMED_ONLY", "STRATEGIES", "VARIANTS", "Strategy"]


@dataclasses.dataclass(frozen=True)
class Strategy:
    """One way to search.

    Attributes:
        name: Short name, as in tables and the JSON.
        searcher: The sweep's ``searcher``: a name, or a configured `sweeplab.OptunaSearcher`;
            None: the sweep's default.
        scheduler: The sweep's ``scheduler`` name; with ``asha``, ``grace`` and ``rf`` set,
            a configured ``ASHAScheduler`` instead; None: the sweep's default.
        early_stopping: Whether trials stop early (they get more trials than the baseline, and
            their curves are cut at the baseline's budget).
        checkpoint: Whether trials need checkpoints (HyperBand pauses them, PBT copies them).
        pauses: Whether the scheduler pauses trials (synchronous HyperBand): its trials must
            not end before ``max_iterations`` (see `BudgetCap`).
        trial_factor: Trials as a multiple of the baseline's; None: the benchmark's
            ``--trial-factor`` for early-stopping strategies, 1 for the others.
        grace: ASHA's grace period (iterations), for a configured variant.
        rf: ASHA's reduction factor, for a configured variant.
    """

    name: str
    searcher: str | OptunaSearcher | None
    scheduler: str | None
    early_stopping: bool
    checkpoint: bool = False
    pauses: bool = False
    trial_factor: int | None = None
    grace: int | None = None
    rf: int | None = None

    def trials(self, baseline_trials: int, early_stopping_factor: int) -> int:
        """How many trials this strategy gets when the baseline gets ``baseline_trials``."""
        if self.trial_factor is not None:
            return baseline_trials * self.trial_factor
        return baseline_trials * (early_stopping_factor if self.early_stopping else 1)

    def make_scheduler(self, iterations: int) -> Any:
        """The sweep's ``scheduler``: a name, or a fresh configured ASHA scheduler."""
        if self.grace is None and self.rf is None:
            return self.scheduler
        from ray.tune.schedulers import ASHAScheduler

        return ASHAScheduler(
            time_attr="training_iteration",
            max_t=iterations,
            grace_period=self.grace or 1,
            reduction_factor=self.rf or 3,
        )


BASELINE = Strategy("random+fifo", "random", "fifo", early_stopping=False)
# Optuna's TPE as sweeplab configured it before the rung rule: Optuna's own 10 start-up trials,
# stopped trials told as PRUNED (ranked below finished ones by how far they got).
PRUNED_TPE = OptunaSearcher(rung_rule=False, group=False, startup_trials=10)
STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in [
        BASELINE,
        Strategy("random+asha", "random", "asha", early_stopping=True),
        # `searcher="optuna"` is `OptunaSearcher()`: TPE, the rung rule, start-up scaled.
        Strategy("optuna+asha", "optuna", "asha", early_stopping=True),
        Strategy("optuna pruned-tpe+asha", PRUNED_TPE, "asha", early_stopping=True),
        Strategy("hyperopt+asha", "hyperopt", "asha", early_stopping=True),
        # HyperBand gets N trials: its brackets are planned from them (sweeplab preview).
        Strategy(
            "optuna+hyperband", "optuna", "hyperband", True, True, pauses=True, trial_factor=1
        ),
        Strategy("random+pbt", "random", "pbt", early_stopping=False, checkpoint=True),
    ]
}
# The other search-side levers, on the synthetic problems: Optuna's GP sampler under the same
# rung rule, and the rung rule with Optuna's fixed 10 start-up trials.
VARIANTS: dict[str, Strategy] = {
    s.name: s
    for s in [
        Strategy("optuna gp+asha", OptunaSearcher(sampler="gp"), "asha", early_stopping=True),
        Strategy(
            "optuna good25+asha",
            OptunaSearcher(good_fraction=0.25),
            "asha",
            early_stopping=True,
        ),
        Strategy(
            "optuna startup10+asha",
            OptunaSearcher(startup_trials=10),
            "asha",
            early_stopping=True,
        ),
    ]
}
# Not in the default run; name them with --strategies. Adaptive ASHA; ASHA's grace period and
# reduction factor under Optuna (measured in the 2026-12-01 03:06 run, docs/search.md), and
# random + FIFO whose trials checkpoint every iteration as PBT's do (what PBT's wall time costs
# beyond checkpoints).
NAMED_ONLY: dict[str, Strategy] = {
    s.name: s
    for s in [
        Strategy("random+fifo ckpt", "random", "fifo", early_stopping=False, checkpoint=True),
        # sweeplab's adaptive ASHA (rung 1 on probation), for the simulator agreement run
        # (benchmarks.search.agree).
        Strategy("random+adaptive-asha", "random", "adaptive-asha", early_stopping=True),
        Strategy("optuna+adaptive-asha", "optuna", "adaptive-asha", early_stopping=True),
        # A Sweep that names no strategy: what the defaults choose for one metric and several
        # reports a trial (docs/search.md, "The default strategy").
        Strategy("defaults", None, None, early_stopping=True),
        Strategy("optuna+asha g1 rf2", "optuna", "asha", True, grace=1, rf=2),
        Strategy("optuna+asha g1 rf4", "optuna", "asha", True, grace=1, rf=4),
        Strategy("optuna+asha g2 rf3", "optuna", "asha", True, grace=2, rf=3),
    ]
}
