"""Curve problems for the simulator: a space, a metric, and a learning curve as a pure function.

A problem's ``curve(config, iteration)`` returns the metrics a trial of ``config`` reports at
``iteration`` (1-based, up to ``max_iterations``) and the simulated seconds that iteration took,
the signature ``sweeplab.simulate(sweep, curve, ...)`` runs. Every curve is deterministic: the
same config and iteration read the same values, in any order and in any process.

- ``lcbench-<task>``: real curves, the LCBench surrogate on each of the 10 development tasks
  (``val_accuracy`` in percent, max; 52 epochs; the surrogate's clock).
- ``h3``, ``h6``: Hartmann 3 and 6 with BOCA's fidelity term, iteration ``t`` at fidelity
  ``t / 27`` (loss, min), with the benchmark's per-config noise.
- ``sim``: the learning-curve simulator whose curves cross (loss, min), with its noise.
- ``mislead``: a synthetic problem whose first iterations rank configs the wrong way by design
  (:func:`mislead_curve`).

Each problem's ``score`` names the noise-free metric to score a run by (same mode).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from benchmarks.search import lcbench
from benchmarks.search._problems import (
    H3_MIN,
    H6_MIN,
    SIM_SPACE,
    _noise,
    hartmann,
    simulate_curve,
)
from sweeplab import uniform

__all__ = [
    "MIN_EPOCH_SECONDS",
    "MISLEAD_DECOY",
    "MISLEAD_OPTIMUM",
    "PROBLEMS",
    "CurveProblem",
    "HartmannCurve",
    "LCBenchCurve",
    "SimulatorCurve",
    "lcbench_problem",
    "mislead_curve",
    "problem",
]

Curve = Callable[[dict[str, Any], int], tuple[dict[str, float], float]]

# The surrogate's clock sometimes stands still or steps back between epochs (a running maximum
# then adds 0 s); a real epoch is never free, and a simulator's events need a positive duration.
MIN_EPOCH_SECONDS = 0.01
SYNTHETIC_ITERATIONS = 27
SYNTHETIC_SECONDS = 1.0  # per iteration, on every synthetic problem


@dataclasses.dataclass(frozen=True)
class CurveProblem:
    """One problem: what a searcher explores, what it optimises, and the learning curve.

    Attributes:
        name: Short name (``lcbench-126029``, ``h3``, ``h6``, ``sim``, ``mislead``).
        title: Name in tables and plots.
        space: The sweeplab search space (a dict of primitives).
        metric: The reported metric a searcher and a scheduler optimise.
        mode: ``"min"`` or ``"max"``: the direction of ``metric`` and ``score``.
        max_iterations: Iterations of a full-length trial.
        curve: ``curve(config, iteration) -> (metrics, seconds)``; ``iteration`` is 1-based.
        score: The noise-free metric to score a run by (``metric`` where there is no noise).
        optimum: The best ``score`` there is, where it is known.
    """

    name: str
    title: str
    space: dict[str, Any]
    metric: str
    mode: str
    max_iterations: int
    curve: Curve
    score: str
    optimum: float | None = None


def _check_iteration(iteration: int, max_iterations: int) -> None:
    if not 1 <= iteration <= max_iterations:
        raise ValueError(f"`1 <= iteration <= {max_iterations}` must hold, but got {iteration=}.")


@dataclasses.dataclass(frozen=True)
class LCBenchCurve:
    """Epoch ``iteration`` of the LCBench surrogate on one task.

    The seconds are the surrogate's clock (a running maximum of its cumulative time) since the
    epoch before, at least :data:`MIN_EPOCH_SECONDS`.
    """

    bench: lcbench.LCBench

    def __call__(self, config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        point = self.bench.point(config, iteration)
        before = self.bench.point(config, iteration - 1)["time"] if iteration > 1 else 0.0
        metrics = {
            "val_accuracy": point["val_accuracy"],
            "val_cross_entropy": point["val_cross_entropy"],
        }
        return metrics, max(point["time"] - before, MIN_EPOCH_SECONDS)


@dataclasses.dataclass(frozen=True)
class HartmannCurve:
    """Hartmann in ``dims`` (3 or 6) variables ``x1..``, iteration ``t`` at fidelity ``t / R``."""

    dims: int
    iterations: int = SYNTHETIC_ITERATIONS
    noise: float = 0.01

    def __call__(self, config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        _check_iteration(iteration, self.iterations)
        x = [config[f"x{i}"] for i in range(1, self.dims + 1)]
        value = hartmann(x, iteration / self.iterations)
        loss = value + _noise(config, iteration, self.noise)
        return {"loss": loss, "score": value}, SYNTHETIC_SECONDS


@dataclasses.dataclass(frozen=True)
class SimulatorCurve:
    """The learning-curve simulator of ``_problems`` (curves cross), for a constant config."""

    iterations: int = SYNTHETIC_ITERATIONS
    noise: float = 0.02

    def __call__(self, config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        _check_iteration(iteration, self.iterations)
        value = simulate_curve(config, iteration)[-1]
        loss = value + _noise(config, iteration, self.noise)
        return {"loss": loss, "score": value}, SYNTHETIC_SECONDS


MISLEAD_OPTIMUM = (0.75, 0.25)
MISLEAD_DECOY = (0.25, 0.75)


def _squared_distance(config: Mapping[str, Any], point: tuple[float, float]) -> float:
    return float((config["x1"] - point[0]) ** 2 + (config["x2"] - point[1]) ** 2)


def mislead_curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    """A problem whose low fidelity misleads by design; two parameters ``x1, x2`` in [0, 1].

    The rule, with ``R = 27`` iterations and ``S = R // 3 = 9``:

    - the final loss is ``f(x) = |x - (0.75, 0.25)|²`` (the optimum, 0, at (0.75, 0.25));
    - the early loss is ``g(x) = |x - (0.25, 0.75)|²``, the decoy: its best configs are the
      mirror image of the optimum's, and over the unit square g ranks configs against f
      (Spearman about -0.5);
    - the loss at iteration ``t`` is ``(1 - w) f + w g + 0.5 / t``, where the weight of the decoy
      ``w = (S - t) / (S - 1)`` falls from 1 at ``t = 1`` to 0 at ``t = S`` and stays 0. The
      ``0.5 / t`` term is the same for every config: the curve falls, the ranking does not move.

    So from iteration ``S`` on, ranks are exactly the final ranks, and before it they are
    partly or wholly the decoy's: ASHA's rungs at 1 and 3 keep the wrong trials. No noise;
    each iteration takes :data:`SYNTHETIC_SECONDS`.
    """
    _check_iteration(iteration, SYNTHETIC_ITERATIONS)
    switch = SYNTHETIC_ITERATIONS // 3
    weight = max(0.0, (switch - iteration) / (switch - 1))
    value = (
        (1.0 - weight) * _squared_distance(config, MISLEAD_OPTIMUM)
        + weight * _squared_distance(config, MISLEAD_DECOY)
        + 0.5 / iteration
    )
    return {"loss": value, "score": value}, SYNTHETIC_SECONDS


def _unit_cube(dims: int) -> dict[str, Any]:
    return {f"x{i}": uniform(0.0, 1.0) for i in range(1, dims + 1)}


@functools.cache
def lcbench_problem(task: int) -> CurveProblem:
    """The LCBench problem of one task (a development task or a held-out one); one per process,
    so its curves' cache is shared."""
    return CurveProblem(
        name=f"lcbench-{task}",
        title=f"LCBench {task} (surrogate)",
        space=dict(lcbench.SPACE),
        metric="val_accuracy",
        mode="max",
        max_iterations=lcbench.EPOCHS,
        curve=LCBenchCurve(lcbench.LCBench(task)),
        score="val_accuracy",
    )


def _synthetic(
    name: str, title: str, space: dict[str, Any], curve: Curve, optimum: float | None = None
) -> CurveProblem:
    return CurveProblem(
        name=name,
        title=title,
        space=space,
        metric="loss",
        mode="min",
        max_iterations=SYNTHETIC_ITERATIONS,
        curve=curve,
        score="score",
        optimum=optimum,
    )


# The development set only: the held-out LCBench tasks (lcbench.HELD_OUT_TASKS) are built with
# lcbench_problem() when a result is confirmed.
PROBLEMS: dict[str, CurveProblem] = {
    **{f"lcbench-{task}": lcbench_problem(task) for task in lcbench.DEV_TASKS},
    "h3": _synthetic("h3", "Hartmann 3 (multi-fidelity)", _unit_cube(3), HartmannCurve(3), H3_MIN),
    "h6": _synthetic("h6", "Hartmann 6 (multi-fidelity)", _unit_cube(6), HartmannCurve(6), H6_MIN),
    "sim": _synthetic(
        "sim", "learning-curve simulator (crossing curves)", dict(SIM_SPACE), SimulatorCurve()
    ),
    "mislead": _synthetic(
        "mislead",
        "misleading low fidelity (synthetic)",
        _unit_cube(2),
        mislead_curve,
        0.5 / SYNTHETIC_ITERATIONS,
    ),
}


def problem(name: str) -> CurveProblem:
    """The problem called ``name``; held-out LCBench tasks too (``lcbench-<task>``).

    Raises:
        ValueError: If no problem has that name.
    """
    if name in PROBLEMS:
        return PROBLEMS[name]
    task = name.removeprefix("lcbench-")
    if task != name and task.isdigit() and int(task) in lcbench.TASKS:
        return lcbench_problem(int(task))
    raise ValueError(
        f"no curve problem is called {name!r}; the problems are {sorted(PROBLEMS)} and "
        f"lcbench-<task> for every task of {lcbench.TASKS}."
    )
