"""What ranking by Pareto front costs: a 1,000-trial simulated sweep with one metric and with two.

    python -m benchmarks.mo_overhead [--trials 1000] [--repeats 5] [--problems synthetic lcbench]

Each problem's sweep (random searcher, ASHA, 4 simulated workers) runs in `sweeplab.simulate`
with one metric, under Tune's ASHA, and with two, under sweeplab's multi-objective ASHA, on the
same curve: the curve reports both metrics either way, so only the scheduler's bookkeeping
differs. The arms alternate, ``--repeats`` times each, after one untimed run of each (imports,
the LCBench surrogate's cache). Prints a table and writes benchmarks/results/mo_overhead.json.
The goal (issue 25): the median wall time with two metrics is at most 5 % above one metric's.

Problems: ``synthetic``, a cheap Python curve where a wider model learns a lower loss at a
higher cost; ``lcbench``, LCBench task 126029 (``val_accuracy`` against the surrogate's
``time``), when ``benchmarks/data/lcbench`` and onnxruntime are there.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gc
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "mo_overhead.json"
GOAL_RATIO = 1.05
WORKERS = 4
LCBENCH_TASK = 126029

Curve = Callable[[dict[str, Any], int], tuple[dict[str, float], float]]


@dataclasses.dataclass(frozen=True)
class Problem:
    """A space and a curve reporting two metrics; the one-metric arm optimises the first."""

    name: str
    space: dict[str, Any]
    curve: Curve
    metrics: tuple[str, str]
    modes: tuple[str, str]
    max_iterations: int


def train_func(config: dict[str, Any]) -> None:
    """Never called: the simulator trains nothing."""


def synthetic_curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    """A saturating loss that a wider model lowers, and that model's cost; 20-40 s per step."""
    width = config["width"]
    final = (math.log10(config["lr"]) + 2.0) ** 2 + 64.0 / width
    loss = final + config["warmup"] / iteration
    cost = width / 512 + 0.2 * config["warmup"]
    return {"loss": loss, "cost": cost}, 20.0 + 20.0 * config["warmup"]


class LCBenchCurve:
    """LCBench's accuracy and its surrogate's clock; an epoch's seconds are the clock's step."""

    def __init__(self, task: int) -> None:
        from benchmarks.search import lcbench

        self.bench = lcbench.LCBench(task)

    def __call__(self, config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        point = self.bench.point(config, iteration)
        before = self.bench.point(config, iteration - 1)["time"] if iteration > 1 else 0.0
        metrics = {"val_accuracy": point["val_accuracy"], "time": point["time"]}
        return metrics, max(point["time"] - before, 1e-3)


def problems() -> dict[str, Problem]:
    """The problems this machine can run (LCBench needs its data and onnxruntime)."""
    from sweeplab import loguniform, randint, uniform

    found = {
        "synthetic": Problem(
            name="synthetic",
            space={
                "lr": loguniform(1e-4, 1.0),
                "width": randint(16, 512),
                "warmup": uniform(0, 1),
            },
            curve=synthetic_curve,
            metrics=("loss", "cost"),
            modes=("min", "min"),
            max_iterations=27,
        )
    }
    try:
        import onnxruntime  # noqa: F401

        from benchmarks.search import lcbench
    except ImportError:
        return found
    if (lcbench.DATA / "model.onnx").is_file():
        found["lcbench"] = Problem(
            name="lcbench",
            space=dict(lcbench.SPACE),
            curve=LCBenchCurve(LCBENCH_TASK),
            metrics=("val_accuracy", "time"),
            modes=("max", "min"),
            max_iterations=lcbench.EPOCHS,
        )
    return found


def make_sweep(problem: Problem, objectives: int, trials: int) -> Any:
    import sweeplab

    metrics, modes = problem.metrics[:objectives], problem.modes[:objectives]
    return sweeplab.Sweep(
        name=f"mo-overhead-{problem.name}",
        train_func=train_func,
        space=problem.space,
        metric=metrics[0] if objectives == 1 else list(metrics),
        mode=modes[0] if objectives == 1 else list(modes),
        searcher="random",
        scheduler="asha",
        num_trials=trials,
        max_iterations=problem.max_iterations,
        seed=0,
    )


def measure(problem: Problem, *, trials: int, repeats: int) -> dict[str, Any]:
    """Both arms of one problem: their runs' seconds, medians, and the ratio of the medians."""
    import sweeplab

    sweeps = {arm: make_sweep(problem, arm, trials) for arm in (1, 2)}
    runs: dict[int, list[float]] = {1: [], 2: []}
    sims = {arm: sweeplab.simulate(sweeps[arm], problem.curve, workers=WORKERS) for arm in (1, 2)}
    for _ in range(repeats):
        for arm in (1, 2):
            gc.collect()
            start = time.perf_counter()
            sweeplab.simulate(sweeps[arm], problem.curve, workers=WORKERS)
            runs[arm].append(time.perf_counter() - start)
    medians = {arm: statistics.median(runs[arm]) for arm in (1, 2)}
    ratio = medians[2] / medians[1]
    return {
        "problem": problem.name,
        "metrics": list(problem.metrics),
        "modes": list(problem.modes),
        "trials": trials,
        "max_iterations": problem.max_iterations,
        "workers": WORKERS,
        "searcher": "random",
        "scheduler": "asha (one metric: Tune's ASHAScheduler; two: MultiObjectiveASHA)",
        "repeats": repeats,
        "iterations": {str(arm): sims[arm].iterations for arm in (1, 2)},
        "stopped_early": {
            str(arm): sum(t.status == "stopped" for t in sims[arm].trials) for arm in (1, 2)
        },
        "seconds": {str(arm): runs[arm] for arm in (1, 2)},
        "median_s": {str(arm): medians[arm] for arm in (1, 2)},
        "ratio": ratio,
        "goal_ratio": GOAL_RATIO,
        "meets_goal": ratio <= GOAL_RATIO,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--problems", nargs="+", default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    available = problems()
    names = args.problems or list(available)
    missing = [name for name in names if name not in available]
    if missing:
        parser.error(f"unknown or unavailable problems {missing}; this machine has {available}")
    load_start = os.getloadavg()
    rows = [measure(available[name], trials=args.trials, repeats=args.repeats) for name in names]
    table = Table(title=f"sweeplab.simulate: {args.trials} ASHA trials, one metric vs two")
    for column in ("problem", "iters 1|2", "stopped 1|2", "median s 1", "median s 2", "ratio"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            row["problem"],
            f"{row['iterations']['1']} | {row['iterations']['2']}",
            f"{row['stopped_early']['1']} | {row['stopped_early']['2']}",
            f"{row['median_s']['1']:.3f}",
            f"{row['median_s']['2']:.3f}",
            f"{row['ratio']:.3f}" + ("" if row["meets_goal"] else " NO"),
        )
    Console().print(table)
    document = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
