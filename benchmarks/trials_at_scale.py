"""What one driver adds per trial in a sweep of many short trials, tracked and untracked.

python -m benchmarks.trials_at_scale [--trials 1000]
    [--arms tracked,tracked-orm,untracked] [--out benchmarks/results/trials_at_scale.json]

Each arm runs the same sweep in a fresh process, one after the other: one-worker trials of 3
reports x 10 ms, ASHA, random search, on a local Ray with 2 CPUs; `tracked` records into a new
SQLite store as `sweeplab sweep` does (WAL mode, the writer chosen by the trial count: a process
from 100 trials on, child runs written in bulk), `tracked-orm` the same through MLflow's client
only (``SWEEPLAB_TRACKING_BULK=0``), `tracked-pg` into a PostgreSQL database (bulk writes),
`tracked-pg-server` through an ``mlflow server`` whose backend store is that database (its REST
API) and `tracked-pg-server-db` through that server with its database named in
``SWEEPLAB_TRACKING_DATABASE`` (child runs written there in bulk). All on 127.0.0.1, the cluster
made by ``initdb`` with ``fsync=off`` as the tests make it, Debian's ``postgresql``; not run
unless named. `tracked-thread` with the writer thread
(``SWEEPLAB_TRACKING_WRITER=thread``), `tracked-fsync` with ``SWEEPLAB_SQLITE_WAL=0`` (MLflow's
defaults, a disk sync per commit; not run unless named), `untracked` records nothing. For each
arm: the sweep's wall time, the iterations its trials reported, the overhead per trial per slot
((wall - minimum) x slots / trials, where minimum is every trial's 3 sleeps spread over the
slots), the same against the sleeps of the iterations reported, and the driver process's peak
RSS. The ratios are against `untracked` and `tracked` (SQLite),
in one run.

Every arm above runs the whole sweep as `sweeplab sweep` does (`run_sweep`: the trial loop on
warm slots). `loop-slots` and `loop-in-process` (not run unless named) run the same trials
through the bare trial loop on two warm slots (`sweeplab.engine.slot_loop`: no tracker, no live
table, no snapshots), untracked: each slot a one-worker Train group, or (`loop-in-process`) the
slot's host actor running the trial itself.

Result files written before the trial loop became the only engine hold `tracked` and
`untracked` arms that ran on Ray Tune's controller, and `tracked-loop` / `untracked-loop` arms
that ran the loop (`benchmarks/results/engine-notes.md` says which file is which).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks._machine import machine
from sweeplab.tracking import DATABASE_ENV

ROOT = Path(__file__).resolve().parents[1]
REPORTS, SLEEP_S, SLOTS = 3, 0.01, 2
ARMS = (
    "tracked",
    "tracked-orm",
    "tracked-pg",
    "tracked-pg-server",
    "tracked-pg-server-db",
    "tracked-thread",
    "tracked-fsync",
    "untracked",
    "loop-slots",
    "loop-in-process",
)
LOOP_ARMS = ("loop-slots", "loop-in-process")
UNTRACKED = ("untracked", *LOOP_ARMS)
DEFAULT_ARMS = ("tracked", "tracked-orm", "untracked")
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "trials_at_scale.json"

SPEC = """
import time

import ray.train

import sweeplab
from sweeplab import uniform


def train_func(config):
    for step in range({reports}):
        time.sleep({sleep})
        ray.train.report({{"loss": config["x"] + 1.0 / (step + 1)}})


sweep = sweeplab.Sweep(
    name="many", train_func=train_func, space={{"x": uniform(0, 1)}}, metric="loss",
    mode="min", searcher="random", scheduler="asha", num_trials={trials},
    max_iterations={reports}, seed=0,
)
"""


def _arm(name: str, trials: int, folder: Path, uri: str | None = None) -> dict[str, Any]:
    """One arm, in this process: the sweep's wall time and this driver's peak RSS."""
    from sweeplab.engine import SweepOptions, run_sweep
    from sweeplab.spec import load_spec

    spec = folder / "spec.py"
    spec.write_text(SPEC.format(reports=REPORTS, sleep=SLEEP_S, trials=trials))
    if name in LOOP_ARMS:
        return _loop_arm(load_spec(spec), folder, in_process=name == "loop-in-process")
    options = SweepOptions(
        spec_path=spec,
        storage=folder / "runs",
        tracking_uri=uri or f"sqlite:///{folder / 'mlflow.db'}",
        live=False,
        track=not name.startswith("untracked"),
    )
    begin = time.perf_counter()
    outcome = run_sweep(load_spec(spec), options)
    wall = time.perf_counter() - begin
    iterations = sum(t.iterations for t in outcome.summary.trials)
    return _arm_result(wall, outcome.trials, outcome.plan.concurrency, outcome.errored, iterations)


def _arm_result(
    wall: float, trials: int, slots: int, errored: int, iterations: int
) -> dict[str, Any]:
    """What an arm prints: its wall time, its trials, the iterations they trained in all
    (ASHA stops most early) and this driver's peak RSS."""
    return {
        "wall_s": round(wall, 1),
        "trials": trials,
        "iterations": iterations,
        "slots": slots,
        "errored": errored,
        "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _loop_arm(sweep: Any, folder: Path, *, in_process: bool) -> dict[str, Any]:
    """The sweep's trials through sweeplab's trial loop on `SLOTS` warm slots."""
    import ray

    from sweeplab.engine import slot_loop, start_local_ray

    start_local_ray(folder, num_cpus=SLOTS, log_to_driver=False)
    begin = time.perf_counter()
    with slot_loop(sweep, storage=folder / "runs", slots=SLOTS, in_process=in_process) as loop:
        loop.run()
    wall = time.perf_counter() - begin
    ray.shutdown()
    errored = sum(t.outcome == "error" for t in loop.trials)
    return _arm_result(wall, len(loop.trials), SLOTS, errored, len(loop.reports))


@contextlib.contextmanager
def _store(name: str, folder: Path) -> Iterator[tuple[str | None, str | None]]:
    """The tracking URI of an arm on PostgreSQL and its database, the cluster (and server)
    running while the arm runs; (None, None) (the arm's SQLite file) for the others. The cluster
    and server are the tests' own (tests/tracking/postgres.py and mlflow_server.py)."""
    if not name.startswith("tracked-pg"):
        yield None, None
        return
    sys.path.insert(0, str(ROOT / "tests" / "tracking"))
    from mlflow_server import MlflowServer
    from postgres import PostgresCluster, postgres_bin_dir, sqlalchemy_uri

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise SystemExit(f"{name}: PostgreSQL is not installed (make postgres)")
    cluster = PostgresCluster(bin_dir)
    cluster.start()
    try:
        database = sqlalchemy_uri(cluster.create_database("trials_at_scale"))
        if name == "tracked-pg":
            yield database, database
            return
        server = MlflowServer(folder / "server", backend_store_uri=database)
        server.start()
        try:
            yield server.uri, database
        finally:
            server.stop()
    finally:
        cluster.stop()


def _stored(database: str, folder: Path) -> dict[str, int]:
    """What the arm's store holds: its runs (the parent and one per trial), those not ended
    FINISHED, and the points of `loss`, beside the results the trials reported (the lines of
    their ``result.json`` files in the run folder)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(database)
    try:
        with engine.connect() as connection:

            def count(sql: str) -> int:
                return int(connection.execute(text(sql)).scalar_one())

            return {
                "stored_runs": count("SELECT count(*) FROM runs"),
                "stored_runs_not_finished": count(
                    "SELECT count(*) FROM runs WHERE status != 'FINISHED'"
                ),
                "stored_loss_points": count("SELECT count(*) FROM metrics WHERE key = 'loss'"),
                "reported_results": sum(
                    len(path.read_text().splitlines())
                    for path in (folder / "runs").rglob("result.json")
                ),
            }
    finally:
        engine.dispose()


def run_arm(name: str, trials: int) -> dict[str, Any]:
    """`_arm` in a fresh interpreter; its JSON result."""
    env = dict(os.environ)
    env.pop("SWEEPLAB_TRACKING_WRITER", None)
    env.pop("SWEEPLAB_TRACKING_BULK", None)
    env.pop(DATABASE_ENV, None)
    if name == "tracked-orm":
        env["SWEEPLAB_TRACKING_BULK"] = "0"
    if name == "tracked-fsync":
        env["SWEEPLAB_SQLITE_WAL"] = "0"
    if name == "tracked-thread":
        env["SWEEPLAB_TRACKING_WRITER"] = "thread"
    with (
        tempfile.TemporaryDirectory(prefix="trials-at-scale-") as folder,
        _store(name, Path(folder)) as (uri, database),
    ):
        if name == "tracked-pg-server-db" and database:
            env[DATABASE_ENV] = database
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.trials_at_scale", "--arm", name,
             "--trials", str(trials), "--folder", folder, *(["--uri", uri] if uri else [])],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=7200,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"arm {name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        if name not in UNTRACKED:
            result.update(
                _stored(database or f"sqlite:///{Path(folder) / 'mlflow.db'}", Path(folder))
            )
    minimum = trials * REPORTS * SLEEP_S / SLOTS
    result["minimum_s"] = round(minimum, 1)
    result["overhead_ms_per_trial_per_slot"] = round(
        (result["wall_s"] - minimum) * SLOTS / trials * 1000, 1
    )
    # The same against the iterations the trials reported (a stopped trial trains no further).
    trained = result["iterations"] * SLEEP_S / SLOTS
    result["overhead_ms_per_trained_trial_per_slot"] = round(
        (result["wall_s"] - trained) * SLOTS / trials * 1000, 1
    )
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--arms", default=",".join(DEFAULT_ARMS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--arm", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--uri", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.arm:
        print(json.dumps(_arm(args.arm, args.trials, args.folder, args.uri)))
        return

    from rich.console import Console
    from rich.table import Table

    console = Console()
    load_start = os.getloadavg()
    names = args.arms.split(",")
    if len(set(names)) != len(names) or not set(names) <= set(ARMS):
        raise SystemExit(f"--arms: distinct names of {ARMS}")
    arms = {}
    for name in names:
        console.print(f"{name}: {args.trials} trials ...")
        arms[name] = run_arm(name, args.trials)
        console.print(f"  {arms[name]}")
    base, sqlite = arms.get("untracked"), arms.get("tracked")
    table = Table(
        title=f"{args.trials} trials of {REPORTS} x {SLEEP_S * 1000:.0f} ms, ASHA, 2 CPUs"
    )
    for column in (
        "arm",
        "wall s",
        "iterations",
        "overhead ms/trial/slot",
        "over trained iterations",
        "driver peak RSS MB",
        "wall / untracked",
        "wall / tracked",
    ):
        table.add_column(column, justify="right")
    for name, arm in arms.items():
        ratio = f"{arm['wall_s'] / base['wall_s']:.2f}" if base else "-"
        to_sqlite = f"{arm['wall_s'] / sqlite['wall_s']:.2f}" if sqlite else "-"
        table.add_row(
            name, str(arm["wall_s"]), str(arm["iterations"]),
            str(arm["overhead_ms_per_trial_per_slot"]),
            str(arm["overhead_ms_per_trained_trial_per_slot"]),
            str(arm["driver_peak_rss_mb"]), ratio, to_sqlite,
        )  # fmt: skip
    console.print(table)
    result = {
        "trials": args.trials,
        "arms": arms,
        "machine": machine(load_start),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    console.print(f"written to {args.out}")


if __name__ == "__main__":
    main()
