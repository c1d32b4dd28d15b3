"""Does one driver keep a cluster busy? Sleeping trials on a loopback Ray cluster of several nodes.

python -m benchmarks.scale_out [--nodes 4] [--cpus 8] [--trials 96] [--reports 5] [--sleep 1]
    [--baseline REV [--pairs 1]] [--out benchmarks/results/scale_out.json]

It starts a real Ray cluster on 127.0.0.1 (`ray start` per node, each with `--cpus` declared
CPUs, so 4 x 8 = 32 one-CPU trials fit at once on a 2-core machine), then runs `sweeplab sweep
--address` against it as a user would: one-worker trials that sleep `--sleep` s per report,
FIFO, random search, tracked into SQLite. From each trial's own wall-clock stamps it computes:

- utilisation: the trials' summed running time over (slots x the time from the first start to
  the last end); 1.0 means no slot ever waited; and each trial actor's own share of busy time
  from its first trial's start to its last trial's end (the median over actors), which leaves
  out the ramp-up of starting the actors;
- the wait between a trial's end and the start of the next trial in the same trial actor (Tune
  reuses the actor), median and 90th percentile;
- the sweep's wall time against the ideal (trials x reports x sleep / slots).

Sleeping trials cost no CPU, so what the figures show is the engine's own cost per trial: the
driver, Tune's event loop, the trial actors' start and the tracker.

With `--baseline REV`, the same sweep also runs on sweeplab as of the git revision REV (a
worktree put first on the nodes' and the driver's PYTHONPATH), in alternating order over
`--pairs` pairs, each arm on a cluster of its own; the table then has one column per arm.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks._machine import machine

ROOT = Path(__file__).resolve().parents[1]
console = Console()

SPEC = """
import os
import socket
import time

import ray.train

import sweeplab
from sweeplab import uniform


def train_func(config):
    worker = f"{{socket.gethostname()}}:{{os.getpid()}}"  # the process that runs the trial
    start = time.time()
    for step in range({reports}):
        time.sleep({sleep})
        ray.train.report({{"loss": config["x"] + 1.0 / (step + 1), "t_start": start,
                           "t_now": time.time(), "worker": worker}})


sweep = sweeplab.Sweep(
    name="scale-out",
    train_func=train_func,
    space={{"x": uniform(0, 1)}},
    metric="loss",
    mode="min",
    num_trials={trials},
    max_iterations={reports},
    max_concurrent_trials={slots},
    seed=0,
)
"""


def slot_figures(spans: list[tuple[str, float, float]], slots: int) -> dict[str, Any]:
    """Utilisation and slot waits of trials given as (trial actor, start, end), wall clock.

    A wait is the time from a trial's end to the start of the next trial in the same trial
    actor (Tune reuses an actor for the next trial); a trial that starts a new actor has no
    wait, its start is part of the ramp-up.
    """
    starts = [start for _, start, _ in spans]
    ends = [end for _, _, end in spans]
    window = max(ends) - min(starts)
    busy = sum(end - start for _, start, end in spans)
    by_actor: dict[str, list[tuple[float, float]]] = {}
    for actor, start, end in spans:
        by_actor.setdefault(actor, []).append((start, end))
    waits, actor_use = [], []
    for runs in by_actor.values():
        runs.sort()
        waits += [max(0.0, nxt[0] - prev[1]) for prev, nxt in itertools.pairwise(runs)]
        life = max(end for _, end in runs) - runs[0][0]
        if life > 0:
            actor_use.append(sum(end - start for start, end in runs) / life)
    return {
        "utilisation": busy / (slots * window) if window > 0 else float("nan"),
        "window_s": window,
        "busy_s": busy,
        "actors": len(by_actor),
        # Each trial actor's busy share from its first start to its last end: the slots once
        # started, without the ramp-up of starting them.
        "actor_utilisation_median": statistics.median(actor_use) if actor_use else float("nan"),
        "wait_median_s": statistics.median(waits) if waits else float("nan"),
        "wait_p90_s": (statistics.quantiles(waits, n=10)[-1] if len(waits) > 1 else
                       (waits[0] if waits else float("nan"))),
        "waits": len(waits),
    }  # fmt: skip


def _trial_spans(storage: Path) -> list[tuple[str, float, float]]:
    """(the process that ran it, start, end) of each trial: from the trial loop's
    ``trials/<id>/result.json`` or, on Tune, its ``progress.csv``."""
    import pandas as pd

    frames = [
        pd.read_json(p, lines=True) for p in storage.glob("scale-out/run-*/trials/*/result.json")
    ]
    frames += [pd.read_csv(p) for p in storage.glob("scale-out/run-*/tune/*/progress.csv")]
    return [
        (
            str(frame["worker"].iloc[0]),
            float(frame["t_start"].iloc[0]),
            float(frame["t_now"].iloc[-1]),
        )
        for frame in frames
        if len(frame)
    ]


def run(
    nodes: int, cpus: int, trials: int, reports: int, sleep: float, code: Path | None = None
) -> dict[str, Any]:
    """One sweep on a new loopback cluster; `code`: a sweeplab checkout to run instead."""
    saved_path = os.environ.get("PYTHONPATH")
    if code is not None:  # the nodes and the driver take their environment from this process
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), saved_path]))
    try:
        return _run(nodes, cpus, trials, reports, sleep)
    finally:
        if saved_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_path


def _run(nodes: int, cpus: int, trials: int, reports: int, sleep: float) -> dict[str, Any]:
    from benchmarks._loopback import loopback_cluster

    slots = nodes * cpus
    with tempfile.TemporaryDirectory(prefix="scale-out-") as tmp_name:
        tmp = Path(tmp_name)
        spec = tmp / "spec.py"
        spec.write_text(SPEC.format(reports=reports, sleep=sleep, trials=trials, slots=slots))
        console.print(f"starting a loopback cluster: {nodes} nodes x {cpus} CPUs")
        begin_cluster = time.perf_counter()
        with loopback_cluster(nodes, cpus) as cluster:
            cluster_s = time.perf_counter() - begin_cluster
            command = [
                sys.executable, "-m", "sweeplab.cli", "sweep", str(spec),
                "--address", cluster.address, "--no-live",
                "--tracking-uri", f"sqlite:///{tmp / 'mlflow.db'}",
                "--storage", str(tmp / "runs"),
            ]  # fmt: skip
            console.print(f"cluster up in {cluster_s:.1f} s; sweeping {trials} trials")
            launched = time.time()
            begin = time.perf_counter()
            log = tmp / "sweep.log"
            with log.open("w") as out:
                sweep = subprocess.Popen(
                    command, cwd=tmp, env=cluster.env, stdout=out, stderr=subprocess.STDOUT
                )
                # wait4: this sweep's own peak RSS, not the largest of all children so far.
                _, status, usage = os.wait4(sweep.pid, 0)
                sweep.returncode = os.waitstatus_to_exitcode(status)
            wall = time.perf_counter() - begin
        if sweep.returncode != 0:
            raise SystemExit(f"the sweep failed:\n{log.read_text()[-6000:]}")
        spans = _trial_spans(tmp / "runs")
    figures = slot_figures(spans, slots)
    ideal = trials * reports * sleep / slots
    return {
        "nodes": nodes,
        "cpus_per_node": cpus,
        "slots": slots,
        "trials": trials,
        "reports": reports,
        "sleep_s": sleep,
        "trials_seen": len(spans),
        "cluster_start_s": round(cluster_s, 1),
        "sweep_wall_s": round(wall, 1),
        "ideal_s": round(ideal, 1),
        "wall_over_ideal": round(wall / ideal, 2),
        "first_start_after_s": round(min(start for _, start, _ in spans) - launched, 1),
        "driver_peak_rss_mb": round(usage.ru_maxrss / 1024),
        **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in figures.items()},
    }


FIGURES = (
    "slots", "trials_seen", "actors", "sweep_wall_s", "ideal_s", "wall_over_ideal",
    "utilisation", "actor_utilisation_median", "wait_median_s", "wait_p90_s",
    "first_start_after_s", "driver_peak_rss_mb",
)  # fmt: skip


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached git worktree of this repository at `rev`, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="scale-out-base-") as tmp_name:
        path = Path(tmp_name) / "sweeplab"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), rev],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            yield path
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True
            )


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """This checkout and `args.baseline` side by side, in alternating order."""
    arms: dict[str, list[dict[str, Any]]] = {"this": [], args.baseline: []}
    with worktree(args.baseline) as base:
        for pair in range(args.pairs):
            order = ["this", args.baseline] if pair % 2 == 0 else [args.baseline, "this"]
            for arm in order:
                console.print(f"pair {pair + 1}/{args.pairs}: {arm}")
                code = None if arm == "this" else base
                arms[arm].append(
                    run(args.nodes, args.cpus, args.trials, args.reports, args.sleep, code)
                )
    return {"arms": arms}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=8, help="declared CPUs per node")
    parser.add_argument("--trials", type=int, default=96)
    parser.add_argument("--reports", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=1.0, help="seconds per report")
    parser.add_argument("--baseline", help="also run sweeplab as of this git revision")
    parser.add_argument("--pairs", type=int, default=1, help="pairs of arms with --baseline")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/scale_out.json")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    title = f"{args.trials} sleeping trials on {args.nodes} nodes x {args.cpus} CPUs"
    if args.baseline:
        result = compare(args)
        columns = [
            (f"{arm} #{i + 1}", figures)
            for arm, runs in result["arms"].items()
            for i, figures in enumerate(runs)
        ]
    else:
        result = run(args.nodes, args.cpus, args.trials, args.reports, args.sleep)
        columns = [("value", result)]
    result["machine"] = machine(load_start)
    result["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    table = Table(title=title)
    table.add_column("figure")
    for name, _ in columns:
        table.add_column(name, justify="right")
    for key in FIGURES:
        table.add_row(key, *(str(figures[key]) for _, figures in columns))
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    console.print(f"written to {args.out}")


if __name__ == "__main__":
    main()
