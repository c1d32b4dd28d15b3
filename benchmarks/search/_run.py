"""Running one sweep of the benchmark through sweeplab's engine and reading its curve back."""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from benchmarks.search._problems import BudgetCap, Problem
from benchmarks.search._strategies import Strategy

__all__ = ["ROOT", "read_reports", "run_one", "start_ray"]

ROOT = Path(__file__).resolve().parents[2]
# A safety net: no sweep of the benchmark takes more than a minute or two; one that hangs
# (see `BudgetCap`) ends here instead of stalling the whole benchmark.
SWEEP_TIME_LIMIT_S = 900


def start_ray(num_cpus: int = 2) -> None:
    """One local Ray for the whole benchmark, started the way `sweeplab sweep` starts it.

    The workers import the problems from this repository (its root is on their path), and
    the Ray is this process's own: ``address="local"`` never joins another user's cluster.
    """
    from sweeplab.engine import start_local_ray

    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    os.environ.pop("RAY_ADDRESS", None)
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)  # inherited by Ray's worker processes
    start_local_ray(
        num_cpus=num_cpus,
        log_to_driver=False,
        include_dashboard=True,  # Train's utilities use the state API
        dashboard_host="127.0.0.1",
        logging_level=logging.WARNING,
    )


def read_reports(run_dir: Path) -> tuple[list[tuple[float, float]], list[int]]:
    """Every report of every trial as ``(wall, score)`` in time order, and each trial's reports.

    Read from the trial loop's ``trials/<id>/result.json`` or, for a sweep on Tune, Tune's
    progress.csv files (each written by the driver alone; a paused or exploited trial appends
    to its own file), so each row is one iteration trained.
    """
    import json

    import pandas as pd

    rows: list[tuple[float, float]] = []
    per_trial: list[int] = []
    for path in sorted(run_dir.glob("trials/*/result.json")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line]
        rows.extend((float(r["wall"]), float(r["score"])) for r in lines)
        per_trial.append(len(lines))
    for path in sorted(run_dir.glob("tune/*/progress.csv")):
        try:
            frame = pd.read_csv(path, usecols=["wall", "score"])
        except (pd.errors.EmptyDataError, ValueError):  # a trial that never reported
            per_trial.append(0)
            continue
        rows.extend(zip(frame["wall"].astype(float), frame["score"].astype(float), strict=True))
        per_trial.append(len(frame))
    rows.sort()
    return rows, per_trial


def run_one(
    problem: Problem,
    strategy: Strategy,
    seed: int,
    *,
    trials: int,
    iterations: int,
    budget: int,
    storage: Path,
    name: str,
    tracking_uri: str | None = None,
    warm_start: str | None = None,
) -> dict[str, Any]:
    """Runs one sweep; returns its reports (seconds since the sweep started, score) and counts.

    The trials stop training once the sweep has spent ``budget`` iterations (see `BudgetCap`).
    """
    from sweeplab import Sweep
    from sweeplab.engine import SweepOptions, run_sweep

    storage.mkdir(parents=True, exist_ok=True)
    cap = BudgetCap(str(storage / f"{name}.budget"), budget, coast=strategy.pauses)
    sweep = Sweep(
        name=name,
        train_func=problem.make_train(iterations, strategy.checkpoint, cap),
        space=problem.space,
        metric="loss",
        mode="min",
        searcher=strategy.searcher,
        scheduler=strategy.make_scheduler(iterations),
        num_trials=trials,
        max_iterations=iterations,
        checkpoints_to_keep=1,
        time_budget_s=SWEEP_TIME_LIMIT_S,
        seed=seed,
        warm_start=warm_start,
    )
    options = SweepOptions(
        storage=storage,
        tracking_uri=tracking_uri,
        live=False,
        track=tracking_uri is not None,
    )
    started = time.time()
    outcome = run_sweep(sweep, options)
    reports, per_trial = read_reports(outcome.storage_dir)
    shutil.rmtree(outcome.storage_dir, ignore_errors=True)  # PBT's checkpoints add up
    return {
        "reports": [(wall - started, score) for wall, score in reports],
        "trial_reports": per_trial,
        "trials": outcome.trials,
        "errored": outcome.errored,
        "wall_s": outcome.wall_s,
        "hit_time_limit": outcome.wall_s >= SWEEP_TIME_LIMIT_S,
    }
