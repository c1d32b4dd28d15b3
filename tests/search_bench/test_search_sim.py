"""The search benchmark in the simulator: a tiny run end to end, the top-k scheduler on a
hand-built case, Optuna's own loop, and the measures on hand-built curves."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import sweeplab
from benchmarks.search import curves, sim
from benchmarks.search._optuna_hyperband import optuna_hyperband_run
from benchmarks.search._sim_measures import analyse_problem, anytime_steps, budget_fraction
from benchmarks.search._sim_strategies import STRATEGIES, optuna_variant
from benchmarks.search._topk import TopKScheduler, topk_iterations

LCBENCH = f"lcbench-{curves.lcbench.DEV_TASKS[0]}"


def test_a_tiny_run_writes_the_json_and_the_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "search-sim.json"
    report = sim.main(
        [
            "--seeds", "2",
            "--problems", "mislead", LCBENCH,
            "--strategies", "topk",
            "--candidate", "topk",
            "--jobs", "1",
            "--out", str(out),
        ]
    )  # fmt: skip
    printed = capsys.readouterr().out
    written = json.loads(out.read_text())
    assert written["config"]["seeds"] == [0, 1]
    assert written["config"]["budget"] == {"mislead": 30 * 27, LCBENCH: 30 * 52}
    assert written["config"]["candidate"] == "topk"
    assert set(written["problems"]) == {"mislead", LCBENCH}
    for name, result in written["problems"].items():
        assert set(result["runs"]) == {"random+fifo", "random+asha", "topk"}
        for by_seed in result["runs"].values():
            assert set(by_seed) == {"0", "1"}
            for run in by_seed.values():
                assert "error" not in run
                assert run["budget_used"] == result["budget"]
                assert run["steps"][-1][2] == run["final_best"]
                assert "reports" not in run
        fifo = result["runs"]["random+fifo"]
        assert all(run["trials"] == 30 for run in fifo.values())
        assert all(run["fraction_fifo"] is not None for run in fifo.values())  # its own target
        assert result["summary"]["topk"]["seeds"] == 2
        assert f"({name})" in printed
    checks = written["checks"]
    assert checks["candidate"] == "topk"
    assert checks["iii_regret_wilcoxon"]["pairs"] == 4
    assert checks["i_lcbench_half_budget"]["tasks"] == 1
    assert checks["i_lcbench_half_budget"]["complete"] is False
    assert isinstance(checks["iv_mislead"]["passed"], bool)
    assert report["timing"]["full_run"]["wall_s_estimate"] > 0
    assert "the checks of topk, the default" in printed
    quick = written["default_checks"]["quick_to_fifo"]
    assert quick["tasks"] == 1
    assert isinstance(quick["passed"], bool)
    assert "extrapolates to" in printed
    assert printed.count(" 2 seeds, median final") == 2 * 3  # a line per problem x strategy


def test_best_grace_brings_the_grace_search_and_the_references() -> None:
    names = [s.name for s in sim.strategies_to_run(["random+asha-best-grace"], "topk")]
    assert set(names) == {
        "random+fifo",
        "random+asha",
        "random+asha-g3",
        "random+asha-g9",
        "topk",
    }
    with pytest.raises(SystemExit, match="unknown strategies"):
        sim.strategies_to_run(["no-such"], "topk")


def _result(value: float, iteration: int = 2) -> dict[str, Any]:
    return {"training_iteration": iteration, "loss": value}


def test_topk_stops_the_trials_outside_the_top_third_so_far() -> None:
    scheduler = TopKScheduler(k=2)
    assert scheduler.set_search_properties("loss", "min")
    values = [5.0, 3.0, 4.0, 1.0, 6.0, 3.0]
    decisions = []
    for index, value in enumerate(values):
        trial = SimpleNamespace(trial_id=f"t{index}")
        assert scheduler.on_trial_result(None, trial, _result(value + 10, 1)) == "CONTINUE"
        decisions.append(scheduler.on_trial_result(None, trial, _result(value)))
        assert scheduler.on_trial_result(None, trial, _result(value, 3)) == "CONTINUE"
    # n seen at k: 1 2 3 4 5 6 -> ceil(n/3) kept: 1 1 1 2 2 2; a tie counts in the trial's favour.
    assert decisions == ["CONTINUE", "CONTINUE", "STOP", "CONTINUE", "STOP", "CONTINUE"]
    assert scheduler.stopped == ["t2", "t4"]


def test_topk_reads_max_mode_the_other_way() -> None:
    scheduler = TopKScheduler(k=1)
    scheduler.set_search_properties("loss", "max")
    trials = [SimpleNamespace(trial_id=f"t{i}") for i in range(3)]
    decisions = [
        scheduler.on_trial_result(None, t, _result(v, 1))
        for t, v in zip(trials, [1.0, 2.0, 0.5], strict=True)
    ]
    assert decisions == ["CONTINUE", "CONTINUE", "STOP"]


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"k": 0}, "k >= 1"), ({"k": 2, "keep": 0.0}, "0 < keep <= 1")]
)
def test_topk_refuses_bad_settings(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TopKScheduler(**kwargs)


@pytest.mark.parametrize(("max_iterations", "k"), [(27, 3), (52, 6), (5, 1), (1, 1)])
def test_topk_iterations(max_iterations: int, k: int) -> None:
    assert topk_iterations(max_iterations) == k


def test_topk_in_the_simulator_stops_exactly_those_trials() -> None:
    values = [5.0, 3.0, 4.0, 1.0, 6.0, 2.5]

    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        return {"loss": config["x"] + 1.0 / iteration}, 1.0

    sweep = sweeplab.Sweep(
        name="topk",
        train_func=lambda config: None,
        space={"x": sweeplab.grid(values)},
        metric="loss",
        mode="min",
        searcher="grid",
        scheduler=TopKScheduler(k=3),
        num_trials=1,
        max_iterations=9,
    )
    result = sweeplab.simulate(sweep, curve, workers=1)
    assert [t.config["x"] for t in result.trials] == values
    assert [t.stopped_at for t in result.trials] == [9, 9, 3, 9, 3, 9]
    assert [t.status for t in result.trials] == ["finished"] * 2 + ["stopped"] + ["finished"] + [
        "stopped",
        "finished",
    ]


def test_optuna_hyperband_spends_the_budget_on_simulated_workers() -> None:
    problem = curves.PROBLEMS["mislead"]
    out = optuna_hyperband_run(problem, seed=0, budget=120, workers=4)
    assert len(out["reports"]) == 120
    assert sum(out["trial_reports"]) == 120
    assert out["trials"] >= 4
    times = [seconds for seconds, _ in out["reports"]]
    assert times == sorted(times)
    again = optuna_hyperband_run(problem, seed=0, budget=120, workers=4)
    assert again["reports"] == out["reports"]  # seeded


def test_an_optuna_variant_checks_its_options_at_once() -> None:
    variant = optuna_variant("optuna startup5+asha", startup_trials=5)
    assert variant.early_stopping and variant.model_based
    assert variant.searcher(curves.PROBLEMS["mislead"]) == sweeplab.OptunaSearcher(startup_trials=5)
    with pytest.raises(sweeplab.SpecError):
        optuna_variant("bad", startup_trials=0)
    assert "optuna+asha" in STRATEGIES


# (iterations spent, seconds, best so far) of a min problem, at a budget of 100.
STEPS = [(10, 1.0, 5.0), (40, 4.0, 3.0), (90, 9.0, 1.0)]


@pytest.mark.parametrize(
    ("target", "fraction"),
    [(5.0, 0.1), (4.0, 0.4), (3.0, 0.4), (2.0, 0.9), (1.0, 0.9), (0.5, None), (None, None)],
)
def test_budget_fraction_on_a_min_curve(target: float | None, fraction: float | None) -> None:
    assert budget_fraction(STEPS, target, budget=100, mode="min") == fraction


@pytest.mark.parametrize(("target", "fraction"), [(90.0, 0.2), (95.0, 0.5), (99.0, None)])
def test_budget_fraction_on_a_max_curve(target: float, fraction: float | None) -> None:
    steps = [(20, 2.0, 90.0), (50, 5.0, 96.0)]
    assert budget_fraction(steps, target, budget=100, mode="max") == fraction


def test_budget_fraction_ignores_what_comes_after_the_budget() -> None:
    assert budget_fraction(STEPS, 1.0, budget=80, mode="min") is None


def test_anytime_steps_keep_each_improvement_in_the_problems_direction() -> None:
    reports = [(1.0, 5.0), (2.0, 6.0), (3.0, 3.0), (4.0, 3.0), (5.0, 1.0)]
    assert anytime_steps(reports, mode="min", budget=4) == [(1, 1.0, 5.0), (3, 3.0, 3.0)]
    assert anytime_steps(reports, mode="max", budget=5) == [(1, 1.0, 5.0), (2, 2.0, 6.0)]


def _run(steps: list[tuple[int, float, float]]) -> dict[str, Any]:
    return {"steps": steps, "final_best": steps[-1][2], "trials": 1, "budget_used": 100}


def test_analysis_targets_regret_and_best_grace() -> None:
    result: dict[str, Any] = {
        "budget": 100,
        "mode": "min",
        "optimum": None,
        "runs": {
            "random+fifo": {"0": _run([(100, 1.0, 2.0)]), "1": _run([(100, 1.0, 4.0)])},
            "random+asha": {"0": _run([(30, 1.0, 2.0)]), "1": _run([(60, 1.0, 3.0)])},
            "random+asha-g3": {"0": _run([(20, 1.0, 1.0)]), "1": _run([(20, 1.0, 4.0)])},
            "random+asha-g9": {"0": _run([(90, 1.0, 2.0)]), "1": _run([(50, 1.0, 3.5)])},
        },
    }
    analyse_problem(result)
    assert result["targets"] == {"0": 2.0, "1": 4.0}
    assert result["asha_median_final"] == 2.5
    asha = result["runs"]["random+asha"]
    assert [asha[s]["fraction_fifo"] for s in "01"] == [0.3, 0.6]
    assert [asha[s]["fraction_asha_median"] for s in "01"] == [0.3, None]
    # No optimum: regret to the best any strategy reached that seed (1.0, then 3.0).
    assert [asha[s]["regret"] for s in "01"] == [1.0, 0.0]
    assert result["regret_reference"] == "best seen that seed"
    # Grace 3: 0.2 on both seeds; grace 1: 0.3 and 0.6; grace 9: 0.9 and 0.5.
    assert result["best_grace"]["grace"] == 3
    assert result["summary"]["random+asha-best-grace"]["to_fifo_target"]["median"] == 0.2
    fifo_to_asha = result["summary"]["random+fifo"]["to_asha_median_final"]
    assert fifo_to_asha["reached"] == 1 and math.isinf(fifo_to_asha["median"])  # 1.0 and never


def _problem(mode: str, candidate: list[float], asha: list[float], fifo: list[float]) -> dict:
    """A problem whose runs reach their final best at the iterations given (budget 100)."""

    def runs(at: list[float], final: float) -> dict[str, Any]:
        return {str(seed): _run([(int(a), 1.0, final)]) for seed, a in enumerate(at)}

    better = -1.0 if mode == "min" else 1.0
    return {
        "budget": 100,
        "mode": mode,
        "optimum": None,
        "runs": {
            "random+fifo": runs(fifo, 0.0),
            "random+asha": runs(asha, 0.0),
            "cand": runs(candidate, better),  # always ends better than both
        },
    }


def test_checks_on_hand_built_problems() -> None:
    from benchmarks.search._sim_measures import checks

    problems = {
        # needs 0.6 against random+asha's 0.4: more than 1.25x
        "mislead": _problem("min", [60, 60, 60], [40, 40, 40], [100, 100, 100]),
        "lcbench-1": _problem("max", [30, 30, 30], [50, 50, 50], [100, 100, 100]),
    }
    for result in problems.values():
        analyse_problem(result)
    found = checks(problems, "cand")
    assert found["i_lcbench_half_budget"]["passed"] is True
    assert found["i_lcbench_half_budget"]["median_fraction_by_task"] == {"lcbench-1": 0.3}
    assert found["ii_never_much_worse"]["failing"] == ["mislead"]
    assert found["ii_never_much_worse"]["passed"] is False
    assert found["iv_mislead"]["passed"] is False
    regret = found["iii_regret_wilcoxon"]
    assert (regret["pairs"], regret["lower"], regret["higher"]) == (6, 6, 0)
    assert regret["passed"] is True and regret["p"] < 0.05
    assert regret["lcbench_only"]["pairs"] == 3
