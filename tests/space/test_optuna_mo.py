"""OptunaSearcher with several metrics: multi-objective TPE, NSGA-II and GP, with constraints.

Ray's `OptunaSearch` is built and driven directly (suggest, on_trial_result,
on_trial_complete), with no Ray cluster.
"""

from __future__ import annotations

import pickle
import statistics
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from sweeplab import OptunaSearcher, SpecError, Sweep, uniform
from sweeplab.pareto import Objective, front_numbers, parse_constraint
from sweeplab.raycompat import optuna_study
from sweeplab.space import Space
from sweeplab.space._optuna_mo import ConstraintViolations, ToldValuesSampler
from sweeplab.strategies import (
    TrialFeedbackSearcher,
    build_search,
    build_tune_search,
    with_trial_feedback,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = Space({"x": uniform(0, 10), "y": uniform(0, 1)})
OBJECTIVES = (Objective("loss", "min"), Objective("latency", "min"))
LATENCY_AT_MOST_4 = parse_constraint("latency <= 4")


def train_func(config: dict[str, Any]) -> None:
    del config


def _searcher(sampler: str, constraints: tuple = (), startup: int | None = None) -> Any:
    return OptunaSearcher(sampler=sampler, startup_trials=startup).build(
        SPACE,
        metric="loss",
        mode="min",
        seed=0,
        num_trials=30,
        objectives=OBJECTIVES,
        constraints=constraints,
    )


def _values(config: dict[str, Any]) -> dict[str, float]:
    """Two objectives that agree: both are best at x = 0."""
    return {"loss": config["x"] + config["y"], "latency": config["x"]}


@pytest.mark.parametrize(
    ("sampler", "kind"),
    [("tpe", optuna.samplers.TPESampler), ("nsga2", optuna.samplers.NSGAIISampler)],
)
def test_two_objective_searchers_suggest_and_learn(sampler: str, kind: type) -> None:
    search = _searcher(sampler, startup=5)
    study = optuna_study(search)
    assert isinstance(study.sampler, kind)
    assert [d.name for d in study.directions] == ["MINIMIZE", "MINIMIZE"]
    xs = []
    for i in range(50):
        config = search.suggest(str(i))
        xs.append(config["x"])
        search.on_trial_complete(str(i), result=_values(config))
    assert all(t.state == TrialState.COMPLETE and len(t.values) == 2 for t in study.trials)
    # The model proposes where both objectives are good, near x = 0: its last 20 proposals
    # average under 3.5, where random ones average 5 (standard error 0.65).
    assert statistics.mean(xs[30:]) < 3.5
    # Optuna's Pareto front is sweeplab's front 1 of the same points.
    fronts = front_numbers([t.values for t in study.trials])
    front = {t.number for t, f in zip(study.trials, fronts, strict=True) if f == 1}
    assert {t.number for t in study.best_trials} == front


@pytest.mark.parametrize("sampler", ["tpe", "nsga2", "gp"])
def test_a_trial_that_breaks_a_constraint_is_infeasible_in_the_study(sampler: str) -> None:
    search = _searcher(sampler, constraints=(LATENCY_AT_MOST_4,))
    study = optuna_study(search)
    assert isinstance(study.sampler, ToldValuesSampler)
    for i, x in enumerate([1.0, 6.0, 4.0, 9.5]):
        search.suggest(str(i))
        search.on_trial_complete(str(i), result={"loss": 10 - x, "latency": x})
    violations = [t.constraints for t in study.trials]
    assert violations == [{"0": 0.0}, {"0": 2.0}, {"0": 0.0}, {"0": 5.5}]
    # Feasible trials only, as Optuna's constrained front keeps them.
    assert {t.number for t in study.best_trials} == {0, 2}


def test_violations_follow_the_constraints_and_a_missing_point_breaks_them_all() -> None:
    violations = ConstraintViolations(
        ("loss", "latency"), (parse_constraint("latency < 4"), parse_constraint("loss >= 1"))
    )
    told = optuna.trial.create_trial(values=[0.5, 4.0], params={}, distributions={})
    assert violations(told) == [pytest.approx(1e-12), 0.5]
    pruned = optuna.trial.create_trial(state=TrialState.PRUNED, params={}, distributions={})
    assert violations(pruned) == [float("inf"), float("inf")]
    assert pickle.loads(pickle.dumps(violations)) == violations  # Tune pickles the searcher
    with pytest.raises(ValueError, match="each constraint must bound an objective"):
        ConstraintViolations(("loss",), (parse_constraint("latency < 4"),))


def _feedback(constraints: tuple = ()) -> TrialFeedbackSearcher:
    searcher = with_trial_feedback(
        _searcher("tpe", constraints),
        metric="loss",
        mode="min",
        max_iterations=4,
        objectives=OBJECTIVES,
    )
    assert isinstance(searcher, TrialFeedbackSearcher)
    assert searcher.metric == ["loss", "latency"]
    return searcher


def _report(searcher: Any, trial_id: str, results: list[dict[str, float]]) -> None:
    for step, result in enumerate(results, start=1):
        searcher.on_trial_result(trial_id, {"training_iteration": step, **result})


def test_feedback_tells_each_ending_with_the_last_point() -> None:
    searcher = _feedback(constraints=(LATENCY_AT_MOST_4,))
    for i in range(6):
        searcher.suggest(str(i))
    # Finished: replays its last result, marked done.
    _report(searcher, "0", [{"loss": 3.0, "latency": 2.0}, {"loss": 2.0, "latency": 2.0}])
    searcher.on_trial_complete(
        "0", {"training_iteration": 2, "loss": 2.0, "latency": 2.0, "done": True}
    )
    # Stopped by ASHA at a withheld result: complete with that result's point.
    _report(searcher, "1", [{"loss": 4.0, "latency": 5.0}])
    searcher.on_trial_complete(
        "1", {"training_iteration": 2, "loss": 3.5, "latency": 5.0, "done": True}
    )
    # Its last result lacks an objective: the last point that held both.
    _report(searcher, "2", [{"loss": 4.0, "latency": 1.0}, {"loss": 3.0}])
    searcher.on_trial_complete("2", {"training_iteration": 2, "loss": 3.0, "done": True})
    # Diverged (latency NaN), errored, and one with no point at all.
    _report(searcher, "3", [{"loss": 1.0, "latency": 1.0}])
    searcher.on_trial_complete(
        "3", {"training_iteration": 2, "loss": 1.0, "latency": float("nan"), "done": True}
    )
    _report(searcher, "4", [{"loss": 1.0, "latency": 1.0}])
    searcher.on_trial_complete("4", None, error=True)
    _report(searcher, "5", [{"loss": 1.0}])
    searcher.on_trial_complete("5", None)

    trials = optuna_study(searcher.inner).trials
    assert [t.state for t in trials] == [
        TrialState.COMPLETE,
        TrialState.COMPLETE,
        TrialState.COMPLETE,
        TrialState.FAIL,
        TrialState.FAIL,
        TrialState.PRUNED,
    ]
    assert [t.values for t in trials[:3]] == [[2.0, 2.0], [3.5, 5.0], [4.0, 1.0]]
    assert [t.constraints for t in trials[:3]] == [{"0": 0.0}, {"0": 1.0}, {"0": 0.0}]
    assert trials[5].constraints == {"0": float("inf")}  # no point: infeasible, last


def test_save_and_restore_keep_the_study_and_the_next_suggestion(tmp_path: Path) -> None:
    searcher = _feedback(constraints=(LATENCY_AT_MOST_4,))
    for i in range(8):
        config = searcher.suggest(str(i))
        searcher.on_trial_complete(str(i), {"training_iteration": 1, **_values(config)})
    searcher.suggest("running")
    searcher.save(str(tmp_path / "searcher.pkl"))
    restored = _feedback(constraints=(LATENCY_AT_MOST_4,))
    restored.restore(str(tmp_path / "searcher.pkl"))

    def told(s: TrialFeedbackSearcher) -> list[tuple[Any, ...]]:
        return [(t.state, t.values, t.constraints) for t in optuna_study(s.inner).trials]

    assert told(restored) == told(searcher)
    assert restored.suggest("next") == searcher.suggest("next")
    config = restored.suggest("running")  # the trial running at the save can still end
    restored.on_trial_complete("running", {"training_iteration": 1, **_values(config)})
    assert optuna_study(restored.inner).trials[8].state == TrialState.COMPLETE


def _sweep(**fields: Any) -> Sweep:
    settings: dict[str, Any] = {
        "name": "s",
        "train_func": train_func,
        "space": {"x": uniform(0, 10), "y": uniform(0, 1)},
        "metric": ["loss", "latency"],
        "mode": ["min", "min"],
        "scheduler": "asha",
        **fields,
    }
    return Sweep(**settings)


@pytest.mark.parametrize(
    "searcher",
    ["optuna", OptunaSearcher(), OptunaSearcher(sampler="nsga2"), OptunaSearcher(sampler="gp")],
)
def test_a_sweep_with_several_metrics_builds_its_optuna_search(searcher: Any) -> None:
    sweep = _sweep(searcher=searcher, constraints=["latency <= 4"])
    search = build_search(sweep).search_alg
    assert isinstance(search, TrialFeedbackSearcher)
    assert search.inner.metric == ["loss", "latency"]
    assert search.inner.mode == ["min", "min"]
    study = optuna_study(search.inner)
    assert isinstance(study.sampler, ToldValuesSampler)  # no rung rule with several metrics
    search.suggest("0")
    search.on_trial_complete("0", {"training_iteration": 1, "loss": 1.0, "latency": 9.0})
    assert [(t.values, t.constraints) for t in study.trials] == [([1.0, 9.0], {"0": 5.0})]


@pytest.mark.parametrize(
    ("searcher", "needs"),
    [("random", "RandomSpaceSearcher"), ("grid", "BasicVariantGenerator")],
)
def test_random_and_grid_take_several_metrics_as_they_are(searcher: str, needs: str) -> None:
    search = build_tune_search(
        SPACE,
        searcher,
        metric="loss",
        mode="min",
        seed=0,
        num_trials=3,
        objectives=OBJECTIVES,
        constraints=(LATENCY_AT_MOST_4,),
    )
    assert type(search.search_alg).__name__ == needs


@pytest.mark.parametrize(
    ("searcher", "message"),
    [
        (OptunaSearcher(rung_view="pruned"), r"`searcher` must keep .* rung_view='pruned'"),
        (OptunaSearcher(rung_weighting=True), r"`searcher` must keep .* rung_weighting=True"),
        (OptunaSearcher(aggregate="last"), r"`searcher` must keep .* aggregate='last'"),
        (OptunaSearcher(min_points=3), r"`searcher` must keep .* min_points=3"),
    ],
)
def test_rung_levers_with_several_metrics_are_refused(searcher: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message) as error:
        _sweep(searcher=searcher)
    assert "\n" not in str(error.value)


def test_nsga2_with_one_metric_is_refused_when_built() -> None:
    searcher = OptunaSearcher(sampler="nsga2")
    assert searcher.single_objective_rule() is not None
    with pytest.raises(SpecError, match="sampler='nsga2' needs several metrics"):
        searcher.build(SPACE, metric="loss", mode="min", seed=0, num_trials=10)


def test_nsga2_with_one_metric_is_refused_by_the_sweep() -> None:
    with pytest.raises(SpecError, match=r"`searcher` with sampler='nsga2' needs several metrics"):
        _sweep(metric="loss", mode="min", searcher=OptunaSearcher(sampler="nsga2"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampler": "nsga2", "startup_trials": 1}, "population size .* must be >= 2"),
        ({"sampler": "cmaes"}, r"sampler must be one of \['tpe', 'gp', 'nsga2'\]"),
    ],
)
def test_bad_sampler_settings(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        OptunaSearcher(**kwargs)


def test_hyperopt_and_constraints_need_what_they_need() -> None:
    with pytest.raises(SpecError, match="'hyperopt' takes one metric"):
        build_tune_search(
            SPACE,
            "hyperopt",
            metric="loss",
            mode="min",
            seed=0,
            num_trials=3,
            objectives=OBJECTIVES,
        )
    with pytest.raises(SpecError, match="constraints only with several metrics"):
        OptunaSearcher().build(
            SPACE,
            metric="loss",
            mode="min",
            seed=0,
            num_trials=3,
            constraints=(LATENCY_AT_MOST_4,),
        )


def test_the_name_says_nsga2_without_a_rung_rule() -> None:
    assert str(OptunaSearcher(sampler="nsga2")) == "optuna (nsga2)"
    assert str(OptunaSearcher()) == "optuna (tpe, rung rule, bohb view, random start, 33.3% random)"
    # No rung rule, no random share, no random start: the multi-objective default is unchanged.
    assert OptunaSearcher().describe(metrics=2) == "optuna (tpe)"


def test_gp_with_several_metrics_needs_optuna_4_5(monkeypatch: pytest.MonkeyPatch) -> None:
    assert OptunaSearcher(sampler="gp").multi_objective_rule() is None  # the installed Optuna
    monkeypatch.setattr("sweeplab.space._optuna_searcher._optuna_version", lambda: (4, 4))
    with pytest.raises(SpecError, match=r"`searcher` with sampler='gp' .* needs Optuna >= 4.5"):
        _sweep(searcher=OptunaSearcher(sampler="gp"))
