"""The search benchmark's problems: Hartmann as published, a simulator whose curves cross."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

from benchmarks.search._problems import (
    H3_ARGMIN,
    H3_MIN,
    H6_ARGMIN,
    H6_MIN,
    SIM_SPACE,
    BudgetCap,
    HartmannTrain,
    SimulatorTrain,
    hartmann,
    simulate_curve,
    simulator_step,
)
from sweeplab import Space

HARTMANN = [pytest.param(H3_ARGMIN, H3_MIN, id="h3"), pytest.param(H6_ARGMIN, H6_MIN, id="h6")]


@pytest.mark.parametrize(("argmin", "minimum"), HARTMANN)
def test_hartmann_hits_the_published_optimum_at_full_fidelity(argmin: Any, minimum: float) -> None:
    assert hartmann(argmin) == pytest.approx(minimum, abs=1e-4)
    assert hartmann(argmin, 1.0) == hartmann(argmin)
    rng = random.Random(0)
    for _ in range(200):  # nowhere in the cube below the optimum
        assert hartmann([rng.random() for _ in argmin]) > minimum
    for _ in range(50):  # and it is a minimum: a small step away is worse
        nearby = [min(1.0, max(0.0, x + rng.uniform(-0.02, 0.02))) for x in argmin]
        assert hartmann(nearby) >= minimum - 1e-5


@pytest.mark.parametrize(("argmin", "minimum"), HARTMANN)
def test_hartmann_is_worse_at_lower_fidelity(argmin: Any, minimum: float) -> None:
    values = [hartmann(argmin, z) for z in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert values == sorted(values, reverse=True)  # strictly better as the fidelity grows
    assert len(set(values)) == len(values)
    assert values[0] > minimum + 0.05  # alpha - 0.1 shifts the optimum by 0.1 * sum(exp) ~ 0.1
    rng = random.Random(1)
    for _ in range(50):
        x = [rng.random() for _ in argmin]
        assert hartmann(x, 0.3) > hartmann(x, 1.0)


@pytest.mark.parametrize(
    ("x", "fidelity", "message"),
    [
        ([0.5] * 4, 1.0, "3 or 6 variables"),
        ([0.5] * 3, 1.5, "fidelity"),
        ([0.5] * 6, -0.1, "fidelity"),
    ],
)
def test_hartmann_errors(x: list[float], fidelity: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        hartmann(x, fidelity)


FAST = {"lr": 1.0, "width": 0.0, "reg": 0.3, "activation": "relu"}
SLOW = {"lr": 0.15, "width": 1.0, "reg": 0.3, "activation": "relu"}


def test_simulator_curves_cross() -> None:
    fast, slow = simulate_curve(FAST, 27), simulate_curve(SLOW, 27)
    assert fast[0] < slow[0] - 0.1  # the fast starter leads after one iteration
    assert slow[-1] < fast[-1] - 0.3  # and ends far behind
    space = Space(SIM_SPACE)
    curves = [simulate_curve(space.sample_one(random.Random(i)), 27) for i in range(100)]
    pairs = list(itertools.combinations(curves, 2))
    crossing = sum(1 for a, b in pairs if (a[0] - b[0]) * (a[-1] - b[-1]) < 0)
    assert 0.05 < crossing / len(pairs) < 0.5  # sometimes, not always


def test_simulator_rewards_a_decaying_learning_rate() -> None:
    """PBT has a schedule to learn: a decaying lr beats the best constant one."""
    best_constant = min(simulate_curve({**SLOW, "lr": lr / 100}, 27)[-1] for lr in range(1, 101))
    loss = 1.0
    for t in range(27):
        loss = simulator_step(loss, {**SLOW, "lr": 0.45 * 0.92**t})
    assert loss < best_constant - 0.01
    assert all(math.isfinite(v) and v > 0 for v in simulate_curve(FAST, 100))


def test_budget_cap_counts_across_trials(tmp_path: Any) -> None:
    cap = BudgetCap(str(tmp_path / "budget"), 3)
    other = BudgetCap(str(tmp_path / "budget"), 3)  # another trial of the same sweep
    assert [cap.take(), other.take(), cap.take(), other.take(), cap.take()] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert (tmp_path / "budget").read_text() == "5"


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda cap: HartmannTrain(3, 10, 0.01, False, cap), id="hartmann"),
        pytest.param(lambda cap: SimulatorTrain(10, 0.02, False, cap), id="simulator"),
    ],
)
def test_trials_stop_once_the_sweep_budget_is_spent(
    make: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray.train

    reports: list[dict[str, Any]] = []
    monkeypatch.setattr(ray.train, "report", lambda metrics, **_: reports.append(metrics))
    monkeypatch.setattr(ray.train, "get_checkpoint", lambda: None)
    train = make(BudgetCap(str(tmp_path / "budget"), 4))
    config = {f"x{i}": 0.5 for i in range(1, 4)} | SLOW
    train(config)
    assert len(reports) == 4  # the budget
    train(config)
    assert len(reports) == 5  # a trial started after it trains one iteration, then ends
    assert all({"loss", "score", "wall"} <= set(r) for r in reports)
    assert reports[0]["loss"] != reports[0]["score"]  # noisy objective, noise-free score
    make(BudgetCap(str(tmp_path / "budget"), 4, coast=True))(config)
    assert len(reports) == 15  # HyperBand's trials run to the end, spent budget or not


def test_digits_coasts_past_the_budget_without_training(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray.train

    from benchmarks.search._problems import DigitsTrain

    reports: list[dict[str, Any]] = []
    monkeypatch.setattr(ray.train, "report", lambda metrics, **_: reports.append(metrics))
    monkeypatch.setattr(ray.train, "get_checkpoint", lambda: None)
    config = {"lr": 0.1, "momentum": 0.5, "hidden": 16, "dropout": 0.1, "batch_size": 128}
    DigitsTrain(4, False, BudgetCap(str(tmp_path / "budget"), 2, coast=True))(config)
    losses = [r["loss"] for r in reports]
    assert len(losses) == 4
    assert losses[1] < losses[0] < 2.31  # trained: below chance level (ln 10)
    assert losses[3] == losses[2] == losses[1]  # past the budget: reported, not trained
