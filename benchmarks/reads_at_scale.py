"""How fast sweeplab reads a large recorded sweep back: `best`, `ls`, `report`, `compare`,
`load_sweep`.

python -m benchmarks.reads_at_scale [--trials 10000] [--out benchmarks/results/reads_at_scale.json]
    [--store DIR] [--only report]

It writes a synthetic ASHA-like sweep (most trials 1 or 3 reports, fewer 9, a few 27; five
params; two metrics a report) into a fresh SQLite MLflow store through the tracker's own event
interface (`SweepTracker.trial_added/started/reported/ended` and `finish`, the calls the
engine's Tune callback makes), without Ray. Then it times each read in a fresh subprocess, so
every figure includes the interpreter's start and the imports a user pays for. With ``--store``
an existing store of the same size is read again instead of being written.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks._machine import machine

ROOT = Path(__file__).resolve().parents[1]
SWEEP = "scale"
RUNGS = (1, 3, 9, 27)
console = Console()


class _Trial:
    """The attributes of a Tune trial that the tracker reads."""

    def __init__(self, trial_id: str, config: dict[str, Any]) -> None:
        self.trial_id = trial_id
        self.config = config
        self.local_path = self.path = None


def _reports(rng: random.Random) -> int:
    """An ASHA trial's number of reports with reduction factor 3: 2/3 stop at the first rung."""
    draw = rng.random()
    return 1 if draw < 0.66 else 3 if draw < 0.89 else 9 if draw < 0.97 else 27


def write_sweep(
    uri: str, storage: Path, trials: int, seed: int = 0, writer: str = "thread"
) -> dict[str, Any]:
    """Records `trials` synthetic trials through a `SweepTracker` and returns what it wrote."""
    from sweeplab.keys import ITERATION_KEY
    from sweeplab.tracking import SweepTracker

    rng = random.Random(seed)
    tracker = SweepTracker(
        tracking_uri=uri,
        sweep_name=SWEEP,
        storage_dir=storage,
        metric="loss",
        mode="min",
        scheduler_name="asha",
        max_iterations=RUNGS[-1],
        settings={"searcher": "random", "num_trials": trials},
        writer=writer,
    )
    begin = time.perf_counter()
    tracker.start()
    points = 0
    for index in range(trials):
        config = {
            "lr": 10 ** rng.uniform(-5, -1),
            "batch_size": rng.choice([16, 32, 64, 128]),
            "dropout": rng.uniform(0.0, 0.5),
            "optimizer": {"name": rng.choice(["sgd", "adam"]), "momentum": rng.uniform(0.8, 0.99)},
        }
        trial = _Trial(f"t{index:05d}", config)
        tracker.trial_added(trial)
        tracker.trial_started(trial)
        reports = _reports(rng)
        floor = rng.uniform(0.05, 1.0)
        for step in range(1, reports + 1):
            loss = floor + 2.0 / step + rng.gauss(0, 0.02)
            result = {"loss": loss, "accuracy": 1 - loss / 3, ITERATION_KEY: step}
            if step == reports and reports < RUNGS[-1]:
                result["done"] = True
            tracker.trial_reported(trial, result)
            points += 2
        tracker.trial_ended(trial)
    tracker.finish()
    return {"write_s": round(time.perf_counter() - begin, 2), "points": points}


def _timed(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    begin = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = round(time.perf_counter() - begin, 2)
    if done.returncode != 0:
        console.print(
            f"[red]{' '.join(command)} exited {done.returncode}[/]\n{done.stderr[-2000:]}"
        )
    return {"seconds": seconds, "rc": done.returncode}


LOAD = (
    "import sys, sweeplab; d = sweeplab.load_sweep(sys.argv[1]);"
    " print(len(d.trials), len(d.history))"
)


def time_reads(uri: str, folder: Path, only: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Each read (or those ``only`` names) in a fresh subprocess: its wall time, exit code and
    (of a file) its size."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    cli = [sys.executable, "-c", "from sweeplab.cli import main; main()"]
    reads = {
        "best --json": [*cli, "best", SWEEP, "--json"],
        "best": [*cli, "best", SWEEP],  # what a person types: with the diverged trials' line
        "ls --json": [*cli, "ls", "--json"],
        "report": [*cli, "report", SWEEP, "--out", str(folder / "report.html")],
        "compare": [*cli, "compare", SWEEP, "--out", str(folder / "compare.html")],
        "load_sweep": [sys.executable, "-c", LOAD, SWEEP],
    }
    files = {"report": folder / "report.html", "compare": folder / "compare.html"}
    results = {}
    for name, command in reads.items():
        if only and name not in only:
            continue
        results[name] = _timed(command, env)
        if name in files and files[name].exists():
            results[name]["mb"] = round(files[name].stat().st_size / 1e6, 2)
        console.print(f"{name}: {results[name]}")
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None, help="JSON file of the results")
    parser.add_argument("--store", type=Path, default=None, help="keep (or reuse) the store here")
    parser.add_argument(
        "--only", action="append", default=None, help="time this read only (repeatable: report)"
    )
    args = parser.parse_args(argv)

    load_start = os.getloadavg()
    scratch = Path(tempfile.mkdtemp(prefix="reads_at_scale-"))
    folder = args.store or scratch
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "mlflow.db"
    uri = f"sqlite:///{database}"
    written: dict[str, Any] = {"reused": True}
    if not database.exists():
        written = write_sweep(uri, folder / "sweep", args.trials)
        console.print(f"wrote {args.trials} trials: {written}")
    reads = time_reads(uri, folder, args.only)
    shutil.rmtree(scratch, ignore_errors=True)

    table = Table(title=f"Reads of a {args.trials:,}-trial sweep (SQLite)")
    for column in ("read", "seconds", "file MB"):
        table.add_column(column)
    for name, result in reads.items():
        table.add_row(name, f"{result['seconds']:.2f}", str(result.get("mb", "")))
    console.print(table)
    if args.out:
        document = {
            "trials": args.trials,
            "written": written,
            "reads": reads,
            "machine": machine(load_start, "mlflow", "plotly"),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
