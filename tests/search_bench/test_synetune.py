"""Syne Tune's baselines in the simulated search benchmark: each run's record on a tiny budget,
the adapter's handling of STOP and PAUSE on the simulated clock, the space's translation, and
the strategies' mean ranks."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

import sweeplab
from benchmarks.search import curves, sim
from benchmarks.search._sim_default_checks import default_checks
from benchmarks.search._sim_measures import against_the_field
from benchmarks.search._sim_ranks import mean_ranks, rank_values
from benchmarks.search._sim_strategies import (
    DEFAULT_SET,
    STRATEGIES,
    SYNETUNE_BOHB_SEEDS,
    SYNETUNE_SLOW_SEEDS,
    SYNETUNE_STRATEGIES,
)
from benchmarks.search._synetune import (
    BASELINES,
    RESOURCE_ATTR,
    build_baseline,
    into_domains,
    simulate_scheduler,
    synetune_space,
    warm_up,
)

H3 = curves.PROBLEMS["h3"]
# What sim.run_one keeps of every strategy's run, sweeplab's and the loops' alike.
RECORD_KEYS = {
    "steps",
    "final_best",
    "budget_used",
    "simulated_s",
    "trials",
    "trials_full_length",
    "run_s",
}


@pytest.fixture(scope="module", autouse=True)
def _quiet() -> None:
    warm_up()


class Recorder:
    """A Syne Tune scheduler as the adapter sees it: `inner`'s decisions, or `decide`'s where
    it returns one; every call recorded. `resume_first` resumes a paused trial before asking
    `inner` for a new one."""

    def __init__(self, inner: Any, decide: Any = None, *, resume_first: bool = False) -> None:
        self.inner = inner
        self.decide = decide
        self.resume_first = resume_first
        self.epochs: dict[int, list[int]] = defaultdict(list)
        self.decisions: dict[int, list[str]] = defaultdict(list)
        self.paused: list[int] = []
        self.resumed: list[int] = []
        self.completed: list[int] = []

    def suggest(self) -> Any:
        from syne_tune.optimizer.scheduler import TrialSuggestion

        if self.resume_first and self.paused:
            trial_id = self.paused.pop(0)
            self.resumed.append(trial_id)
            return TrialSuggestion.resume_suggestion(trial_id)
        return self.inner.suggest()

    def on_trial_add(self, trial: Any) -> None:
        self.inner.on_trial_add(trial)

    def on_trial_result(self, trial: Any, result: dict[str, Any]) -> str:
        self.epochs[trial.trial_id].append(result[RESOURCE_ATTR])
        decision = self.inner.on_trial_result(trial, result)
        if self.decide is not None:
            decision = self.decide(trial.trial_id, result[RESOURCE_ATTR]) or decision
        self.decisions[trial.trial_id].append(decision)
        if decision == "PAUSE":
            self.paused.append(trial.trial_id)
        return decision

    def on_trial_remove(self, trial: Any) -> None:
        self.inner.on_trial_remove(trial)

    def on_trial_complete(self, trial: Any, result: dict[str, Any]) -> None:
        self.completed.append(trial.trial_id)
        self.inner.on_trial_complete(trial, result)

    def on_trial_error(self, trial: Any) -> None:
        self.inner.on_trial_error(trial)


@pytest.mark.parametrize("strategy", SYNETUNE_STRATEGIES, ids=lambda s: s.name)
def test_each_baseline_makes_the_run_record_of_every_strategy(
    strategy: sim.SimStrategy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sim, "BUDGET_TRIALS", 2)  # B = 2 x 27 iterations
    budget = sim.budget_of(H3)
    run = sim.run_one("h3", strategy, seed=0)
    assert "error" not in run, run.get("traceback")
    assert set(run) == RECORD_KEYS
    assert run["budget_used"] == budget
    assert 0 < run["simulated_s"] <= budget  # 1 s an iteration on 4 workers
    spent = [step[0] for step in run["steps"]]
    bests = [step[2] for step in run["steps"]]
    assert spent == sorted(set(spent)) and spent[-1] <= budget
    assert bests == sorted(bests, reverse=True)  # min problem: each step improves
    assert run["final_best"] == bests[-1]
    if strategy.early_stopping:
        assert run["trials"] > 4 and run["trials_full_length"] < run["trials"]
    else:
        assert (run["trials"], run["trials_full_length"]) == (2, 2)


@pytest.mark.parametrize("name", ["asha", "bohb"])
def test_a_run_is_seeded(name: str) -> None:
    def run(seed: int) -> list[tuple[float, float]]:
        from benchmarks.search._synetune import synetune_run

        out = synetune_run(name, H3, seed=seed, budget=120, workers=4, trials=600)
        return out["reports"]

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_asha_stops_a_trial_at_a_rung_and_it_trains_no_further() -> None:
    scheduler = Recorder(build_baseline("asha", H3, seed=0))
    out = simulate_scheduler(H3, scheduler, budget=300, workers=4, trials=600)
    assert sum(out["trial_reports"]) == len(out["reports"]) == 300
    stopped_below_max = 0
    for trial_id, epochs in scheduler.epochs.items():
        assert epochs == list(range(1, len(epochs) + 1))
        decisions = scheduler.decisions[trial_id]
        if "STOP" in decisions:
            assert decisions.index("STOP") == len(decisions) - 1  # nothing after a STOP
            assert out["trial_reports"][trial_id] == epochs[-1]
            stopped_below_max += epochs[-1] < H3.max_iterations
    assert stopped_below_max >= 10  # grace 1, reduction factor 3: rungs at 1, 3, 9


def test_a_stop_at_epoch_two_ends_every_trial_there() -> None:
    def stop_at_two(trial_id: int, epoch: int) -> str | None:
        return "STOP" if epoch == 2 else None

    scheduler = Recorder(build_baseline("random", H3, seed=0), stop_at_two)
    out = simulate_scheduler(H3, scheduler, budget=40, workers=4, trials=600)
    assert [n for n in out["trial_reports"] if n] == [2] * 20
    assert scheduler.completed == []


def test_a_paused_trial_resumes_at_the_next_epoch_on_the_simulated_clock() -> None:
    def pause_at_one(trial_id: int, epoch: int) -> str | None:
        return "PAUSE" if epoch == 1 else None

    scheduler = Recorder(build_baseline("random", H3, seed=0), pause_at_one, resume_first=True)
    # Trials 0-3 pause at epoch 1 and are resumed at once; 4-7 start when they finish at 27 s
    # (1 s an epoch), and pause and resume the same way; the budget ends in their 4th epoch.
    out = simulate_scheduler(H3, scheduler, budget=4 * 27 + 4 * 3 + 1, workers=4, trials=8)
    assert scheduler.resumed == [0, 1, 2, 3, 4, 5, 6, 7]
    for trial_id in range(8):
        assert scheduler.epochs[trial_id][:3] == [1, 2, 3]  # from epoch 2, not from scratch
    assert out["trial_reports"] == [27] * 4 + [4, 3, 3, 3]
    assert sorted(scheduler.completed) == [0, 1, 2, 3]
    times = [seconds for seconds, _ in out["reports"]]
    assert times == sorted(times)
    assert times[-1] == 27.0 + 4.0


def test_no_trial_starts_after_the_trial_limit() -> None:
    scheduler = Recorder(build_baseline("random", H3, seed=0))
    out = simulate_scheduler(H3, scheduler, budget=10_000, workers=4, trials=3)
    assert out["trials"] == 3
    assert out["trial_reports"] == [27] * 3
    assert scheduler.completed == [0, 1, 2]


@pytest.mark.parametrize(
    ("param", "domain", "log", "bounds", "q"),
    [
        (sweeplab.uniform(0.0, 1.0), "Float", False, [0.0, 1.0], None),
        (sweeplab.loguniform(1e-4, 1e-1), "Float", True, [1e-4, 1e-1], None),
        (sweeplab.quniform(0.0, 1.0, 0.25), "Float", False, [0.0, 1.0], 0.25),
        (sweeplab.qloguniform(0.5, 8.0, 0.5), "Float", True, [0.5, 8.0], 0.5),
        (sweeplab.randint(1, 5), "Integer", False, [1, 5], None),
        (sweeplab.randint(16, 512, log=True), "Integer", True, [16, 512], None),
        (sweeplab.quniform(0, 10, 2), "Integer", False, [0, 10], 2),
        (sweeplab.choice(["relu", "tanh"]), "Categorical", False, ["relu", "tanh"], None),
        (sweeplab.choice([16, 32]), "Categorical", False, [16, 32], None),
    ],
)
def test_a_sweeplab_space_translates_with_inclusive_bounds(
    param: Any, domain: str, log: bool, bounds: list[Any], q: float | None
) -> None:
    from syne_tune.config_space import Categorical, LogUniform, Quantized

    found = synetune_space({"x": param, "constant": 7})
    assert found["constant"] == 7
    translated = found["x"]
    sampler = translated.get_sampler()
    quantized = isinstance(sampler, Quantized)
    inner = sampler.get_sampler() if quantized else sampler
    assert type(translated).__name__ == domain
    assert isinstance(inner, LogUniform) == log
    # Syne Tune's bounds are inclusive, its randint's too (sweeplab's are).
    if isinstance(translated, Categorical):
        assert translated.categories == bounds
    else:
        assert [translated.lower, translated.upper] == bounds
    assert (sampler.q if quantized else None) == q


@pytest.mark.parametrize(
    ("space", "match"),
    [
        ({"x": sweeplab.choice([1, "a"])}, "scalars of one type"),
        ({"x": sweeplab.choice([[1, 2], [3]])}, "scalars of one type"),
        ({"x": sweeplab.choice({"a": {"y": sweeplab.uniform(0, 1)}})}, "conditional"),
        ({"x": {"y": sweeplab.uniform(0, 1)}}, "nested"),
    ],
)
def test_a_space_without_a_syne_tune_domain_is_refused(space: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        synetune_space(space)


def test_a_suggested_number_off_its_domain_is_clipped_into_it() -> None:
    space = synetune_space(curves.lcbench.SPACE)
    config = {"batch_size": 6, "max_units": 2000, "learning_rate": 0.5, "num_layers": 3}
    assert into_domains(config, space) == {
        "batch_size": 16,
        "max_units": 1024,
        "learning_rate": 0.1,
        "num_layers": 3,
    }


def test_the_baselines_run_by_default_and_the_slow_ones_on_fewer_seeds() -> None:
    names = {s.name: s for s in SYNETUNE_STRATEGIES}
    assert set(names) == {f"synetune-{name}" for name in BASELINES}
    assert {n for n in names if n in DEFAULT_SET} == set(names) - {"synetune-random"}
    assert sim.seeds_of(STRATEGIES["synetune-asha-cqr"], range(20)) == list(
        range(SYNETUNE_SLOW_SEEDS)
    )
    assert sim.seeds_of(STRATEGIES["synetune-bohb"], range(20)) == list(range(SYNETUNE_BOHB_SEEDS))
    assert SYNETUNE_SLOW_SEEDS < SYNETUNE_BOHB_SEEDS < 20
    assert sim.seeds_of(STRATEGIES["synetune-asha"], range(20)) == list(range(20))
    # --all-seeds lifts the caps.
    assert sim.seeds_of(STRATEGIES["synetune-asha-cqr"], range(20), capped=False) == list(range(20))
    # Syne Tune's baselines run on the real curves only; sweeplab's strategies everywhere.
    assert sim.runs_on(STRATEGIES["synetune-bohb"], "lcbench-126029")
    assert not sim.runs_on(STRATEGIES["synetune-bohb"], "h3")
    assert sim.runs_on(STRATEGIES["optuna+adaptive-asha"], "h3")
    assert sim.trial_limit(STRATEGIES["synetune-random"]) == sim.BUDGET_TRIALS
    assert sim.trial_limit(STRATEGIES["synetune-asha"]) == sim.EARLY_STOPPING_TRIALS
    with pytest.raises(ValueError, match="must be one of"):
        build_baseline("hyperband", H3, seed=0)


@pytest.mark.parametrize(
    ("values", "mode", "ranks"),
    [
        ({"a": 1.0, "b": 2.0, "c": 3.0}, "min", {"a": 1, "b": 2, "c": 3}),
        ({"a": 1.0, "b": 2.0, "c": 3.0}, "max", {"a": 3, "b": 2, "c": 1}),
        ({"a": 1.0, "b": 1.0, "c": 0.5}, "min", {"a": 2.5, "b": 2.5, "c": 1}),
    ],
)
def test_rank_values(values: dict[str, float], mode: str, ranks: dict[str, float]) -> None:
    assert rank_values(values, mode=mode) == ranks


def test_mean_ranks_over_problems_of_both_kinds() -> None:
    def summary(final: float | None, seeds: int = 20) -> dict[str, Any]:
        return {"final_best_median": final, "seeds": seeds}

    problems = {
        "lcbench-1": {
            "mode": "max",
            "summary": {"a": summary(90.0), "b": summary(95.0, 3), "c": summary(None)},
        },
        "h3": {
            "mode": "min",
            "summary": {"a": summary(-3.8), "b": summary(-3.0, 3), "c": summary(-3.5)},
        },
    }
    found = mean_ranks(problems)["by_strategy"]
    assert list(found) == ["a", "b", "c"]
    assert found["a"] == {
        "mean_rank": 1.5,
        "mean_rank_lcbench": 2.0,
        "mean_rank_synthetic": 1.0,
        "first": ["h3"],
        "problems": 2,
        "seeds": 20,
    }
    assert (found["b"]["mean_rank"], found["b"]["seeds"]) == (2.0, 3)
    assert (found["c"]["mean_rank"], found["c"]["problems"]) == (2.0, 1)


def test_the_candidate_is_paired_with_each_strategy_of_the_field_on_lcbench() -> None:
    def runs(*regrets: float | None) -> dict[str, dict[str, Any]]:
        return {str(seed): {"regret": r} for seed, r in enumerate(regrets)}

    problems = {
        "lcbench-1": {
            "runs": {
                "cand": runs(0.1, 0.2, 0.3, 0.1, 0.2, 0.1),
                "synetune-bohb": runs(0.5, 0.6, 0.4, 0.3, 0.9, 0.8),
                "synetune-asha-cqr": runs(0.05),  # one seed: one pair
                "random+asha-g3": runs(9, 9, 9, 9, 9, 9),  # a grace: left out
            }
        },
        "lcbench-2": {"runs": {"cand": runs(0.4, None), "synetune-bohb": runs(0.2, 0.1)}},
        # Synthetic problems are not paired: their regrets are in other units.
        "h3": {"runs": {"cand": runs(5.0), "synetune-bohb": runs(1.0)}},
    }
    found = against_the_field(problems, "cand")["by_strategy"]
    assert set(found) == {"synetune-bohb", "synetune-asha-cqr"}
    bohb = found["synetune-bohb"]
    assert (bohb["pairs"], bohb["lower"], bohb["higher"]) == (7, 6, 1)
    assert bohb["p"] < 0.05
    assert bohb["passed"] is True
    cqr = found["synetune-asha-cqr"]
    assert (cqr["pairs"], cqr["lower"], cqr["higher"]) == (1, 0, 1)
    assert cqr["p"] > 0.5


def test_the_default_checks_decide_only_on_baselines_run_on_every_seed() -> None:
    def summary(fifo: float | None) -> dict[str, Any]:
        return {"to_fifo_target": {"median": fifo}}

    def ranked(lcbench: float, seeds: int) -> dict[str, Any]:
        return {"mean_rank_lcbench": lcbench, "seeds": seeds}

    def paired(p: float) -> dict[str, Any]:
        return {"pairs": 40, "lower": 30, "higher": 10, "p": p}

    report: dict[str, Any] = {
        "config": {"seeds": list(range(20))},
        "problems": {
            "lcbench-1": {"summary": {"cand": summary(0.3), "random+adaptive-asha": summary(0.3)}},
            "lcbench-2": {"summary": {"cand": summary(0.6), "random+adaptive-asha": summary(0.5)}},
            "h3": {"summary": {"cand": summary(0.9)}},  # not an LCBench task
        },
        "ranks": {
            "by_strategy": {
                "cand": ranked(1.5, 20),
                "random+asha": ranked(3.0, 20),
                "synetune-asha": ranked(2.5, 20),
                "synetune-asha-cqr": ranked(2.0, 1),
            }
        },
        "field": {
            "by_strategy": {
                "random+asha": paired(0.001),
                "synetune-asha": paired(0.01),
                "synetune-asha-cqr": paired(0.2),
            }
        },
    }
    found = default_checks(report, "cand")
    assert found["quick_to_fifo"]["failing"] == ["lcbench-2"]
    assert found["quick_to_fifo"]["passed"] is False
    assert found["against_adaptive_asha"]["failing"] == ["lcbench-2"]  # 1.2x
    assert found["first_in_rank"]["passed"] is True
    # The best Syne Tune baseline by rank ran one seed of 20: shown, not decided.
    assert set(found["regret"]["against"]) == {"random+asha", "synetune-asha-cqr"}
    assert found["regret"]["undecided"] == ["synetune-asha-cqr"]
    assert found["regret"]["passed"] is None
    report["ranks"]["by_strategy"]["synetune-asha-cqr"]["seeds"] = 20
    assert default_checks(report, "cand")["regret"]["passed"] is False  # p = 0.2
    report["field"]["by_strategy"]["synetune-asha-cqr"]["p"] = 0.04
    assert default_checks(report, "cand")["regret"]["passed"] is True
