"""The tuning strategies: every named scheduler and searcher, and what a sweep's pair does.

One registry (`SCHEDULERS`, `SEARCHERS`) maps each name to its builder, its traits, the rules
a sweep using it must keep and its preview; a searcher's builder is its compile function from
`sweeplab.space`, and `build_tune_search` compiles a space for a searcher's name. The spec's
checks, the trial loop and ``sweeplab preview`` read it. A configured Tune scheduler
object's traits come from its Tune class or are declared (`SchedulerTraits`), never guessed.

Ray is imported only when a scheduler or search is built; the Ray-side classes below
(`HyperBand`, `MultiObjectiveASHA`, `TrialFeedbackSearcher`, ...) are imported
on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sweeplab.strategies._builders import SchedulerSetup
from sweeplab.strategies._defaults import DEFAULTS_DOC, StrategyChoice, default_strategy
from sweeplab.strategies._pbt_settings import PBT
from sweeplab.strategies._registry import (
    SCHEDULERS,
    SEARCHERS,
    SchedulerEntry,
    SearcherEntry,
    build_tune_search,
)
from sweeplab.strategies._schedule import (
    ASHA_REDUCTION_FACTOR,
    HYPERBAND_REDUCTION_FACTOR,
    PBT_QUANTILE_FRACTION,
    PBT_RESAMPLE_PROBABILITY,
    PlanInputs,
    Rung,
    TrialPlan,
    hyperband_brackets,
    median_grace,
    pbt_interval,
)
from sweeplab.strategies._strategy import (
    build_scheduler,
    build_search,
    scheduler_traits,
    strategy_rule_break,
    total_trials,
    trial_plan,
)
from sweeplab.strategies._sweep import RuleBreak, StrategySweep
from sweeplab.strategies._sync_pbt import LoopPBT
from sweeplab.strategies._traits import SchedulerTraits, tune_trial_limit

if TYPE_CHECKING:
    from sweeplab.strategies._adaptive_asha import AdaptiveASHA
    from sweeplab.strategies._hyperband import HyperBand, ResumeWhenStalled
    from sweeplab.strategies._mo_asha import MultiObjectiveASHA
    from sweeplab.strategies._pickled_state import PickledState
    from sweeplab.strategies._searcher_feedback import (
        OutcomeLog,
        TrialFeedbackSearcher,
        TrialOutcome,
        hyperopt_loss,
        with_trial_feedback,
    )

__all__ = [
    "ASHA_REDUCTION_FACTOR",
    "DEFAULTS_DOC",
    "HYPERBAND_REDUCTION_FACTOR",
    "PBT",
    "PBT_QUANTILE_FRACTION",
    "PBT_RESAMPLE_PROBABILITY",
    "SCHEDULERS",
    "SEARCHERS",
    "AdaptiveASHA",
    "HyperBand",
    "LoopPBT",
    "MultiObjectiveASHA",
    "OutcomeLog",
    "PickledState",
    "PlanInputs",
    "ResumeWhenStalled",
    "RuleBreak",
    "Rung",
    "SchedulerEntry",
    "SchedulerSetup",
    "SchedulerTraits",
    "SearcherEntry",
    "StrategyChoice",
    "StrategySweep",
    "TrialFeedbackSearcher",
    "TrialOutcome",
    "TrialPlan",
    "build_scheduler",
    "build_search",
    "build_tune_search",
    "default_strategy",
    "hyperband_brackets",
    "hyperopt_loss",
    "median_grace",
    "pbt_interval",
    "scheduler_traits",
    "strategy_rule_break",
    "total_trials",
    "trial_plan",
    "tune_trial_limit",
    "with_trial_feedback",
]

# Names whose modules import Ray, imported on first access.
_WITH_RAY = {
    "AdaptiveASHA": "_adaptive_asha",
    "HyperBand": "_hyperband",
    "ResumeWhenStalled": "_hyperband",
    "MultiObjectiveASHA": "_mo_asha",
    "OutcomeLog": "_searcher_feedback",
    "PickledState": "_pickled_state",
    "TrialFeedbackSearcher": "_searcher_feedback",
    "TrialOutcome": "_searcher_feedback",
    "hyperopt_loss": "_searcher_feedback",
    "with_trial_feedback": "_searcher_feedback",
}


def __getattr__(name: str) -> Any:
    if name in _WITH_RAY:
        return getattr(importlib.import_module(f"{__name__}.{_WITH_RAY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
