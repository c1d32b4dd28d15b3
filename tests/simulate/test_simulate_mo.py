"""The simulator on multi-objective sweeps: no Ray runtime is started."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from sweeplab import SpecError, Sweep, uniform
from sweeplab.pareto import Objective, crowding_distances, front_numbers
from sweeplab.simulation import simulate
from sweeplab.strategies import ASHA_REDUCTION_FACTOR


def train_func(config: dict[str, Any]) -> None:
    pass


SPACE = {"x": uniform(0, 1), "y": uniform(0, 1)}


def make(**changes: Any) -> Sweep:
    fields: dict[str, Any] = {
        "name": "simulated-mo",
        "train_func": train_func,
        "space": SPACE,
        "metric": ["loss", "cost"],
        "mode": ["min", "max"],
        "scheduler": "asha",
        "num_trials": 40,
        "max_iterations": 9,
        "seed": 0,
    }
    return Sweep(**{**fields, **changes})


def trade_off(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    """A loss that falls with iteration, and a `cost` to maximise that conflicts with it."""
    loss = config["x"] + 1.0 / iteration
    return {"loss": loss, "cost": config["x"] - config["y"], "extra": 1.0}, 1.0


@pytest.mark.parametrize("searcher", ["random", "optuna"])
def test_a_two_objective_asha_sweep_stops_trials_and_keeps_their_points(searcher: str) -> None:
    from sweeplab.strategies import MultiObjectiveASHA, build_scheduler

    sweep = make(searcher=searcher)
    assert isinstance(build_scheduler(sweep), MultiObjectiveASHA)
    sim = simulate(sweep, trade_off, workers=3)
    assert len(sim.trials) == 40
    statuses = [t.status for t in sim.trials]
    assert "stopped" in statuses and "finished" in statuses
    assert sim.objectives == (Objective("loss", "min"), Objective("cost", "max"))
    assert (sim.metric, sim.mode) == ("loss", "min")
    points = sim.points()
    assert list(points) == [t.trial_id for t in sim.trials]
    for trial in sim.trials:
        expected, _ = trade_off(trial.config, trial.stopped_at)
        assert points[trial.trial_id] == {"loss": expected["loss"], "cost": expected["cost"]}


def rung_stops(points: list[tuple[float, float]], reduction_factor: int) -> list[bool]:
    """Whether each arrival at a rung stops, by MultiObjectiveASHA's documented rule."""
    recorded: list[tuple[float, float]] = []
    stops = []
    for point in points:
        together = [*recorded, point]
        fronts = front_numbers(together)
        distance: dict[int, float] = {}
        for front in set(fronts):
            members = [i for i, f in enumerate(fronts) if f == front]
            values = crowding_distances([together[i] for i in members])
            distance.update(zip(members, values, strict=True))
        order = sorted(range(len(together)), key=lambda i: (fronts[i], -distance[i], i))
        position = {index: place + 1 for place, index in enumerate(order)}
        scores = [-position[i] for i in range(len(recorded))]
        quantile = (1 - 1 / reduction_factor) * 100
        stops.append(bool(scores) and -position[len(recorded)] < np.percentile(scores, quantile))
        recorded.append(point)
    return stops


def test_one_worker_stops_at_the_first_rung_by_pareto_rank() -> None:
    # One worker: trials reach rung 1 (iteration 1) one after another, in creation order, so
    # the rung's decisions are the documented rule over their first points (loss, -cost).
    sim = simulate(make(num_trials=30), trade_off, workers=1)
    firsts = [trade_off(t.config, 1)[0] for t in sim.trials]
    expected = rung_stops([(m["loss"], -m["cost"]) for m in firsts], ASHA_REDUCTION_FACTOR)
    assert [t.stopped_at == 1 for t in sim.trials] == expected
    assert 0 < sum(expected) < len(expected)


def test_fifo_runs_every_trial_to_the_end() -> None:
    sim = simulate(make(scheduler="fifo", num_trials=5), trade_off, workers=2)
    assert [t.stopped_at for t in sim.trials] == [9] * 5


def test_the_curve_must_report_every_objective() -> None:
    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        return {"loss": 1.0}, 1.0

    with pytest.raises(SpecError, match=r"must report the sweep's metric 'cost'"):
        simulate(make(), curve)


def test_nested_objectives_are_found_by_their_path() -> None:
    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, Any], float]:
        return {"val": {"loss": config["x"]}, "cost": config["y"]}, 1.0

    sim = simulate(make(metric=["val/loss", "cost"], num_trials=4), curve)
    points = sim.points()
    assert [points[t.trial_id] for t in sim.trials] == [
        {"val/loss": t.config["x"], "cost": t.config["y"]} for t in sim.trials
    ]


def test_divergence_is_checked_on_the_first_objective_only() -> None:
    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        first_nan = config["x"] < 0.5 and iteration == 2
        return {"loss": math.nan if first_nan else config["x"], "cost": math.nan}, 1.0

    sim = simulate(make(scheduler="fifo", num_trials=8, max_iterations=3), curve)
    for trial in sim.trials:
        if trial.config["x"] < 0.5:
            assert (trial.status, trial.stopped_at) == ("diverged", 2)
        else:
            assert (trial.status, trial.stopped_at) == ("finished", 3)


def test_a_trial_without_every_objective_has_no_point() -> None:
    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, Any], float]:
        # `cost` is reported from iteration 2 only, and not at all by half the trials.
        metrics: dict[str, Any] = {"loss": config["x"] + iteration, "cost": None}
        if iteration >= 2 and config["y"] < 0.5:
            metrics["cost"] = config["y"]
        return metrics, 1.0

    sim = simulate(make(scheduler="fifo", num_trials=6, max_iterations=3), curve)
    points = sim.points()
    for trial in sim.trials:
        if trial.config["y"] < 0.5:
            assert points[trial.trial_id] == {
                "loss": trial.config["x"] + 3,
                "cost": trial.config["y"],
            }
        else:
            assert points[trial.trial_id] is None


def test_a_single_metric_simulation_has_one_objective_and_points() -> None:
    sweep = make(metric="loss", mode="min", scheduler="fifo", num_trials=2, max_iterations=2)
    sim = simulate(sweep, trade_off)
    assert sim.objectives == (Objective("loss", "min"),)
    assert sim.points() == {t.trial_id: {"loss": t.config["x"] + 0.5} for t in sim.trials}


def test_the_overhead_benchmark_runs_at_a_tiny_size() -> None:
    from benchmarks import mo_overhead

    row = mo_overhead.measure(mo_overhead.problems()["synthetic"], trials=12, repeats=1)
    assert row["trials"] == 12
    assert set(row["median_s"]) == {"1", "2"}
    assert row["ratio"] > 0
