"""The simulator's curve problems: finite metrics, positive seconds, deterministic; the rules."""

from __future__ import annotations

import itertools
import math
import pickle

import pytest
from scipy.stats import spearmanr

from benchmarks.search import lcbench
from benchmarks.search._problems import H3_ARGMIN, simulate_curve
from benchmarks.search.curves import (
    MIN_EPOCH_SECONDS,
    MISLEAD_DECOY,
    MISLEAD_OPTIMUM,
    PROBLEMS,
    CurveProblem,
    mislead_curve,
    problem,
)
from sweeplab import Space

NAMES = sorted(PROBLEMS)


def test_every_problem_is_there() -> None:
    expected = {f"lcbench-{task}" for task in lcbench.DEV_TASKS} | {"h3", "h6", "sim", "mislead"}
    assert set(PROBLEMS) == expected
    assert all(PROBLEMS[name].name == name for name in PROBLEMS)


@pytest.mark.parametrize("name", NAMES)
def test_a_curve_reads_finite_metrics_and_positive_seconds(name: str) -> None:
    prob = PROBLEMS[name]
    assert prob.mode in ("min", "max")
    for config in Space(prob.space).sample(seed=0, n=5):
        for iteration in (1, 2, prob.max_iterations):
            metrics, seconds = prob.curve(config, iteration)
            assert {prob.metric, prob.score} <= set(metrics)
            assert all(isinstance(v, float) and math.isfinite(v) for v in metrics.values())
            assert isinstance(seconds, float) and seconds > 0
            assert prob.curve(dict(config), iteration) == (metrics, seconds)  # deterministic


@pytest.mark.parametrize("name", NAMES)
def test_a_curve_reads_the_same_in_any_order_and_after_pickling(name: str) -> None:
    prob = PROBLEMS[name]
    (config,) = Space(prob.space).sample(seed=1)
    iterations = range(1, prob.max_iterations + 1)
    forward = [prob.curve(config, t) for t in iterations]
    copy: CurveProblem = pickle.loads(pickle.dumps(prob))
    backward = [copy.curve(config, t) for t in reversed(iterations)]
    assert forward == backward[::-1]


def test_lcbench_seconds_follow_the_surrogate_clock() -> None:
    prob = problem("lcbench-126029")
    bench = lcbench.LCBench(126029)
    for config in Space(prob.space).sample(seed=2, n=5):
        curve = bench.curve(config)
        seconds = [prob.curve(config, epoch)[1] for epoch in range(1, lcbench.EPOCHS + 1)]
        clock = [0.0] + [point["time"] for point in curve]
        steps = [max(b - a, MIN_EPOCH_SECONDS) for a, b in itertools.pairwise(clock)]
        assert seconds == pytest.approx(steps)
        assert prob.curve(config, 52)[0]["val_accuracy"] == curve[-1]["val_accuracy"]


def test_the_synthetic_problems_port_the_benchmark_problems() -> None:
    h3 = PROBLEMS["h3"]
    optimum = {f"x{i}": x for i, x in enumerate(H3_ARGMIN, start=1)}
    assert h3.curve(optimum, 27)[0]["score"] == pytest.approx(h3.optimum, abs=1e-4)
    sim = PROBLEMS["sim"]
    (config,) = Space(sim.space).sample(seed=3)
    scores = [sim.curve(config, t)[0]["score"] for t in range(1, 28)]
    assert scores == simulate_curve(config, 27)


def _spearman(a: list[float], b: list[float]) -> float:
    return float(spearmanr(a, b).statistic)


def test_mislead_ranks_the_wrong_way_early_and_the_right_way_by_a_third() -> None:
    prob = PROBLEMS["mislead"]
    configs = Space(prob.space).sample(seed=0, n=200)
    final = [mislead_curve(c, prob.max_iterations)[0]["score"] for c in configs]
    first = [mislead_curve(c, 1)[0]["score"] for c in configs]
    third = [mislead_curve(c, prob.max_iterations // 3)[0]["score"] for c in configs]
    assert _spearman(first, final) < 0
    assert _spearman(third, final) > 0.8
    at = {"optimum": dict(zip(("x1", "x2"), MISLEAD_OPTIMUM, strict=True))}
    at["decoy"] = dict(zip(("x1", "x2"), MISLEAD_DECOY, strict=True))
    assert mislead_curve(at["decoy"], 1)[0]["loss"] < mislead_curve(at["optimum"], 1)[0]["loss"]
    assert mislead_curve(at["optimum"], 27)[0]["loss"] == pytest.approx(prob.optimum)


def test_problem_finds_held_out_tasks_and_refuses_unknown_names() -> None:
    held_out = lcbench.HELD_OUT_TASKS[0]
    assert problem(f"lcbench-{held_out}").max_iterations == lcbench.EPOCHS
    assert problem("mislead") is PROBLEMS["mislead"]
    for name in ("digits", "lcbench-1", "lcbench-"):
        with pytest.raises(ValueError, match="no curve problem is called"):
            problem(name)


def test_iterations_beyond_the_problem_are_refused() -> None:
    for name in ("h3", "sim", "mislead", "lcbench-126029"):
        prob = PROBLEMS[name]
        (config,) = Space(prob.space).sample(seed=0)
        with pytest.raises(ValueError, match="must hold"):
            prob.curve(config, prob.max_iterations + 1)
        with pytest.raises(ValueError, match="must hold"):
            prob.curve(config, 0)
