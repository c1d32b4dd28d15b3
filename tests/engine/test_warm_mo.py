"""A warm start of a multi-objective Optuna sweep: the warm trials join the study's history
with every objective's value (no Ray cluster: the searchers are driven directly)."""

from __future__ import annotations

from typing import Any

import optuna
from optuna.trial import TrialState

from sweeplab import Sweep, uniform
from sweeplab.engine._search import build_search
from sweeplab.engine._warm import WarmConfig, WarmStartPlan
from sweeplab.raycompat import optuna_study

optuna.logging.set_verbosity(optuna.logging.WARNING)


def train_func(config: dict[str, Any]) -> None:
    del config


def test_warm_trials_join_a_multi_objective_study() -> None:
    sweep = Sweep(
        name="warm-mo",
        train_func=train_func,
        space={"x": uniform(0, 1)},
        metric=["loss", "ms"],
        mode=["min", "min"],
        searcher="optuna",
        scheduler="asha",
        max_iterations=3,
        num_trials=4,
    )
    plan = WarmStartPlan(
        source="given", configs=(WarmConfig(config={"x": 0.25}, origin="warm_start[0]"),)
    )
    searcher = build_search(sweep, plan).search_alg
    searcher.set_search_properties("loss", "min", {})
    assert searcher.suggest("warm") == {"x": 0.25}
    for step, (loss, ms) in enumerate([(0.9, 2.0), (0.5, 3.0)], start=1):
        searcher.on_trial_result("warm", {"training_iteration": step, "loss": loss, "ms": ms})
    searcher.on_trial_complete(
        "warm", result={"training_iteration": 2, "loss": 0.5, "ms": 3.0, "done": True}
    )
    study = optuna_study(searcher.inner.inner)
    (trial,) = study.get_trials(deepcopy=False)
    assert trial.state == TrialState.COMPLETE
    assert trial.values == [0.5, 3.0]
    assert trial.params == {"x": 0.25}
