"""Multi-objective search in the simulator: accuracy against training time on LCBench.

    python -m benchmarks.search.mo [--seeds 20] [--tasks 126029 ...] [--strategies ...]
        [--jobs 2] [--out benchmarks/results/search-mo.json.gz]

Per LCBench development task: maximise ``val_accuracy`` and minimise ``time`` (the
surrogate's cumulative training seconds, as a running maximum) on 4 simulated workers, with a
budget of B = 30 x 52 iterations. Random + FIFO gets 30 trials; a strategy that stops trials
early gets 600 and is stopped when it has spent B. Every run is ``sweeplab.simulate`` of a real
multi-objective `sweeplab.Sweep`.

A trial's point is its latest report, as sweeplab ranks it. The hypervolume of the points
reported so far is measured after every 1 % of B, against a reference point fixed per task:
0 % accuracy and the longest full training time among 200 random configs of the task. Measured
per task x strategy x seed: the final hypervolume and the share of B needed to reach random +
FIFO's final hypervolume of the same seed ("never" when it does not). Then issue 25's checks:
the median share over tasks x seeds of the candidate (``<= 0.33``), and on how many tasks its
median share is no more than random + multi-objective ASHA's (``>= 7`` of 10).
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import math
import multiprocessing
import platform
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.search import lcbench

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "search-mo.json.gz"
WORKERS = 4
BUDGET_TRIALS = 30
EARLY_STOPPING_TRIALS = BUDGET_TRIALS * 20
CHECKPOINTS = 100  # hypervolume measured after every 1 % of the budget
REFERENCE_SAMPLE = 200
METRICS = ("val_accuracy", "time")
MODES = ("max", "min")
MIN_EPOCH_SECONDS = 1e-3

# name -> (searcher, scheduler, early stopping)
STRATEGIES: dict[str, tuple[Any, str, bool]] = {
    "random+fifo": ("random", "fifo", False),
    "random+mo-asha": ("random", "asha", True),
    "tpe+mo-asha": ("optuna", "asha", True),
    "nsga2+mo-asha": ("nsga2", "asha", True),
}
REFERENCE = "random+fifo"
BASELINE = "random+mo-asha"
DEFAULT_CANDIDATE = "random+mo-asha"

__all__ = ["hypervolume_steps", "main", "reference_point", "run_one"]


class _Curve:
    """``curve(config, iteration)`` for the simulator: accuracy and the surrogate's clock."""

    def __init__(self, task: int) -> None:
        self.task = task
        self.bench = lcbench.LCBench(task)

    def __call__(self, config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        point = self.bench.point(config, iteration)
        before = self.bench.point(config, iteration - 1)["time"] if iteration > 1 else 0.0
        metrics = {"val_accuracy": point["val_accuracy"], "time": point["time"]}
        return metrics, max(point["time"] - before, MIN_EPOCH_SECONDS)


@cache
def _curve(task: int) -> _Curve:
    return _Curve(task)


@cache
def reference_point(task: int) -> tuple[float, float]:
    """The task's hypervolume reference, signed to minimise: 0 % accuracy, and the longest
    full training time among :data:`REFERENCE_SAMPLE` random configs (seed 0)."""
    from sweeplab.space import Space

    curve = _curve(task)
    configs = Space(dict(lcbench.SPACE)).sample(seed=0, n=REFERENCE_SAMPLE)
    longest = max(curve.bench.point(c, lcbench.EPOCHS)["time"] for c in configs)
    return (0.0, float(longest))


def _searcher(name: str) -> Any:
    if name == "nsga2":
        from sweeplab import OptunaSearcher

        return OptunaSearcher(sampler="nsga2")
    return name


def _no_training(config: dict[str, Any]) -> None:
    """The Sweep's training function: never called, the curve stands in for training."""


def hypervolume_steps(
    reports: Sequence[tuple[str, float, float]], reference: tuple[float, float], budget: int
) -> list[float]:
    """The hypervolume after each 1 % of ``budget``: reports are (trial id, accuracy, time) in
    arrival order; each trial counts with its latest report."""
    from sweeplab.pareto import hypervolume

    latest: dict[str, tuple[float, float]] = {}
    steps: list[float] = []
    marks = [math.ceil(budget * (k + 1) / CHECKPOINTS) for k in range(CHECKPOINTS)]
    mark = 0
    for spent, (trial_id, accuracy, seconds) in enumerate(reports[:budget], start=1):
        latest[trial_id] = (-accuracy, seconds)
        while mark < len(marks) and spent >= marks[mark]:
            steps.append(hypervolume(list(latest.values()), reference))
            mark += 1
    while len(steps) < CHECKPOINTS:  # a run that spent less than the budget
        steps.append(steps[-1] if steps else 0.0)
    return steps


def run_one(task: int, strategy: str, seed: int) -> dict[str, Any]:
    """One seeded run: its hypervolume steps and counts (an error is recorded, not raised)."""
    import sweeplab

    searcher, scheduler, early = STRATEGIES[strategy]
    budget = BUDGET_TRIALS * lcbench.EPOCHS
    started = time.perf_counter()
    try:
        sweep = sweeplab.Sweep(
            name="search-mo",
            train_func=_no_training,
            space=dict(lcbench.SPACE),
            metric=list(METRICS),
            mode=list(MODES),
            searcher=_searcher(searcher),
            scheduler=scheduler,
            num_trials=EARLY_STOPPING_TRIALS if early else BUDGET_TRIALS,
            max_iterations=lcbench.EPOCHS,
        )
        sim = sweeplab.simulate(
            sweep, _curve(task), workers=WORKERS, seed=seed, budget_iterations=budget
        )
        reports = [
            (r.trial_id, float(r.metrics["val_accuracy"]), float(r.metrics["time"]))
            for r in sim.reports
        ]
        steps = hypervolume_steps(reports, reference_point(task), budget)
    except Exception as error:  # one broken run must not lose the others
        return {
            "error": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc(limit=6),
            "run_s": round(time.perf_counter() - started, 3),
        }
    return {
        "hypervolume": [round(v, 4) for v in steps],
        "final": steps[-1],
        "trials": len(sim.trials),
        "run_s": round(time.perf_counter() - started, 3),
    }


def _share_to_reach(steps: Sequence[float], target: float) -> float:
    for index, value in enumerate(steps):
        if value >= target:
            return (index + 1) / CHECKPOINTS
    return math.inf


def _warm_up() -> None:
    import optuna

    import sweeplab.simulation  # noqa: F401

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", message="Define-by-run function passed in the `space`")
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _run_task(task: tuple[int, str, int]) -> tuple[int, str, int, dict[str, Any]]:
    return (*task, run_one(*task))


def _execute(tasks: list[tuple[int, str, int]], jobs: int) -> Iterable[tuple]:
    if jobs == 1:
        _warm_up()
        yield from map(_run_task, tasks)
        return
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs, initializer=_warm_up) as pool:
        yield from pool.imap_unordered(_run_task, tasks, chunksize=1)


def analyse(report: dict[str, Any], candidate: str) -> dict[str, Any]:
    """Shares of B to reach random + FIFO's final hypervolume, per task, and the checks."""
    shares: dict[str, dict[str, list[float]]] = {}
    for task, runs in report["tasks"].items():
        reference = runs.get(REFERENCE, {})
        per_strategy: dict[str, list[float]] = {}
        for strategy, by_seed in runs.items():
            values = []
            for seed, run in by_seed.items():
                target = reference.get(seed, {}).get("final")
                if run.get("error") or target is None:
                    continue
                # The steps are stored rounded to 4 decimals: round the target alike.
                values.append(_share_to_reach(run["hypervolume"], round(target, 4)))
            per_strategy[strategy] = values
        shares[task] = per_strategy
    summary: dict[str, Any] = {}
    for task, per_strategy in shares.items():
        summary[task] = {
            strategy: {
                "median_share": _median(values),
                "reached": sum(1 for v in values if math.isfinite(v)),
                "runs": len(values),
                "median_final": _median(
                    [r["final"] for r in report["tasks"][task][strategy].values() if "final" in r]
                ),
            }
            for strategy, values in per_strategy.items()
        }
    pooled = [v for per in shares.values() for v in per.get(candidate, [])]
    no_more = [
        task
        for task, per in summary.items()
        if candidate in per
        and BASELINE in per
        and _le(per[candidate]["median_share"], per[BASELINE]["median_share"])
    ]
    checks = {
        "candidate": candidate,
        "median_share_over_tasks_x_seeds": _median(pooled),
        "goal_median_share": 0.33,
        "tasks_no_more_than_random_mo_asha": len(no_more),
        "goal_tasks": 7,
        "tasks": len(summary),
    }
    return {"summary": summary, "checks": checks}


def _le(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and a <= b


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _show(value: float | None) -> str:
    if value is None:
        return "-"
    return "never" if math.isinf(value) else f"{value:.2f}"


def print_tables(report: dict[str, Any]) -> None:
    strategies = report["config"]["strategies"]
    print("\nshare of B to reach random + FIFO's final hypervolume (median over seeds)")
    print(f"{'task':<8} " + " ".join(f"{s:>15}" for s in strategies))
    for task, per in report["analysis"]["summary"].items():
        row = [_show(per.get(s, {}).get("median_share")) for s in strategies]
        print(f"{task:<8} " + " ".join(f"{v:>15}" for v in row))
    print("\nmedian final hypervolume")
    for task, per in report["analysis"]["summary"].items():
        row = [per.get(s, {}).get("median_final") for s in strategies]
        print(f"{task:<8} " + " ".join(f"{v:>15.4g}" if v else f"{'-':>15}" for v in row))
    checks = report["analysis"]["checks"]
    print(
        f"\ncandidate {checks['candidate']}: median share "
        f"{_show(checks['median_share_over_tasks_x_seeds'])}"
        f" (goal <= {checks['goal_median_share']}); no more than random + MO-ASHA on "
        f"{checks['tasks_no_more_than_random_mo_asha']}/{checks['tasks']} tasks "
        f"(goal >= {checks['goal_tasks']})"
    )


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "never" if value > 0 else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search.mo")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--tasks", nargs="+", type=int, default=list(lcbench.DEV_TASKS))
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--candidate", default=DEFAULT_CANDIDATE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--reanalyse", action="store_true", help="analyse --out's runs again, run nothing"
    )
    return parser


def _write(path: Path, report: dict[str, Any]) -> None:
    """The report as JSON; gzipped when ``path`` ends in ``.gz`` (800 runs' steps: ~1 MB)."""
    text = json.dumps(_finite(report)) + "\n"
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    else:
        path.write_text(text)


def _read(path: Path) -> str:
    data = path.read_bytes()
    return gzip.decompress(data).decode() if path.suffix == ".gz" else data.decode()


def reanalyse(path: Path, candidate: str = DEFAULT_CANDIDATE) -> dict[str, Any]:
    """Analyses a written report again (the runs are kept) and rewrites it."""
    report = json.loads(_read(path))
    for per in report["tasks"].values():
        for runs in per.values():
            for run in runs.values():
                if "final" in run and isinstance(run["final"], str):
                    run["final"] = math.inf
    report["analysis"] = analyse(report, candidate)
    print_tables(report)
    _write(path, report)
    return report


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    if args.reanalyse:
        return reanalyse(args.out, args.candidate)
    unknown = [s for s in args.strategies if s not in STRATEGIES]
    if unknown or args.candidate not in STRATEGIES:
        raise SystemExit(f"strategies are {list(STRATEGIES)}, not {unknown or args.candidate}.")
    strategies = [s for s in STRATEGIES if s in {*args.strategies, REFERENCE, BASELINE}]
    strategies += [args.candidate] if args.candidate not in strategies else []
    seeds = list(range(args.seeds))
    tasks = [(t, s, seed) for s in strategies[::-1] for t in args.tasks for seed in seeds]
    report: dict[str, Any] = {
        "config": {
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "argv": sys.argv[1:],
            "versions": {p: metadata.version(p) for p in ("ray", "optuna", "numpy", "onnxruntime")},
            "python": platform.python_version(),
            "seeds": seeds,
            "workers": WORKERS,
            "budget_iterations": BUDGET_TRIALS * lcbench.EPOCHS,
            "strategies": strategies,
            "objectives": dict(zip(METRICS, MODES, strict=True)),
        },
        "tasks": {str(t): {s: {} for s in strategies} for t in args.tasks},
    }
    print(
        f"multi-objective benchmark: {len(args.tasks)} tasks x {len(strategies)} strategies x "
        f"{len(seeds)} seeds = {len(tasks)} runs on {args.jobs} process(es)",
        flush=True,
    )
    started = time.perf_counter()
    for done, (task, strategy, seed, run) in enumerate(_execute(tasks, args.jobs), start=1):
        report["tasks"][str(task)][strategy][str(seed)] = run
        if done % 20 == 0 or done == len(tasks):
            print(f"  {done}/{len(tasks)} runs, {time.perf_counter() - started:.0f} s", flush=True)
    errors = [
        (t, s, seed, r["error"])
        for t, per in report["tasks"].items()
        for s, runs in per.items()
        for seed, r in runs.items()
        if "error" in r
    ]
    for error in errors[:5]:
        print("error:", *error)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    report["analysis"] = analyse(report, args.candidate)
    print_tables(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    _write(args.out, report)
    print(f"wrote {args.out} ({report['wall_s']} s)")
    return report


if __name__ == "__main__":
    main()
