"""2-worker PBT with a population larger than the slots, beside FIFO on the same trials.

python -m benchmarks.pbt_groups [--trials 4] [--reports 8] [--arms fifo,pbt]
    [--out benchmarks/results/pbt_groups.json]

Each arm runs the same sweep in a fresh process, one after the other, untracked, on a local Ray
with 2 CPUs: `--trials` trials of 2 workers (one CPU each, so one warm slot) x `--reports`
reports of 0.2 s, each report with a checkpoint, random search, seed 0. `fifo` runs every trial
to the end, one after the other; `pbt` runs sweeplab's synchronous PBT (`PBT(interval=2)`),
whose trials pause at each round, leave the slot to the next, and come back from their
checkpoint, or from their donor's when exploited. For each arm: the sweep's wall time, the
iterations reported, the trials that errored and PBT's exploits (reports whose ``origin`` is
another trial's). The ratio is against `fifo`, in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from benchmarks._fresh import chosen_arms, run_fresh
from benchmarks._machine import machine

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("fifo", "pbt")
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "pbt_groups.json"
SLEEP_S = 0.2

SPEC = """
import json
import os
import tempfile
import time
import uuid

import ray.train

import sweeplab
from sweeplab import uniform


def train_func(config):
    state = {{"epoch": 0, "origin": uuid.uuid4().hex[:8], "w": 0.0}}
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "state.json")) as f:
                state = json.load(f)
    rank = ray.train.get_context().get_world_rank()
    for epoch in range(state["epoch"], {reports}):
        time.sleep({sleep})
        state["w"] += config["lr"]
        state["epoch"] = epoch + 1
        metrics = {{"loss": (config["x"] - 0.3) ** 2 + 1.0 / (epoch + 1) - 0.01 * state["w"],
                    "origin": state["origin"]}}
        with tempfile.TemporaryDirectory() as folder:
            saved = None
            if rank == 0:
                with open(os.path.join(folder, "state.json"), "w") as f:
                    json.dump(state, f)
                saved = ray.train.Checkpoint.from_directory(folder)
            ray.train.report(metrics, checkpoint=saved)


sweep = sweeplab.Sweep(
    name="pbt-groups",
    train_func=train_func,
    space={{"x": uniform(0, 1), "lr": uniform(0.001, 1.0)}},
    metric="loss",
    mode="min",
    searcher="random",
    scheduler={scheduler},
    num_trials={trials},
    max_iterations={reports},
    workers_per_trial=2,
    cpus_per_worker=1,
    seed=0,
)
"""

ARM = """
import json, sys
from pathlib import Path

from benchmarks._fresh import sweep_untracked
from sweeplab.engine import SweepCallback

folder = Path(sys.argv[1])
reports = []


class Record(SweepCallback):
    def on_trial_result(self, trial, result):
        reports.append((trial.trial_id, result["origin"]))


outcome, wall = sweep_untracked(folder, [Record()])
first = {}
for trial, origin in reports:
    first.setdefault(trial, origin)
exploited = sum(1 for trial, origin in reports if origin != first[trial])
print(json.dumps({"wall_s": wall, "trials": outcome.trials, "errored": outcome.errored,
                  "iterations": len(reports), "reports_after_an_exploit": exploited,
                  "concurrency": outcome.plan.concurrency}))
"""


def run_arm(arm: str, trials: int, reports: int) -> dict[str, Any]:
    """Runs one arm in a fresh process; returns its figures."""
    scheduler = "sweeplab.PBT(interval=2)" if arm == "pbt" else '"fifo"'
    spec = SPEC.format(reports=reports, sleep=SLEEP_S, trials=trials, scheduler=scheduler)
    return run_fresh(arm, ARM, spec)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--reports", type=int, default=8)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    arms = chosen_arms(parser, args.arms, ARMS)
    load_start = os.getloadavg()
    results: dict[str, Any] = {}
    for arm in arms:
        begin = time.perf_counter()
        results[arm] = run_arm(arm, args.trials, args.reports)
        print(f"{arm}: {results[arm]['wall_s']:.1f} s ({time.perf_counter() - begin:.1f} s)")
    base = results.get("fifo", {}).get("wall_s")
    print(
        f"\n{'arm':<6} {'wall s':>8} {'vs fifo':>8} {'slots':>6} {'iterations':>11} "
        f"{'errored':>8} {'after exploit':>14}"
    )
    for arm, r in results.items():
        ratio = f"{r['wall_s'] / base:.2f}" if base else "-"
        print(
            f"{arm:<6} {r['wall_s']:>8.1f} {ratio:>8} {r['concurrency']:>6} "
            f"{r['iterations']:>11} {r['errored']:>8} {r['reports_after_an_exploit']:>14}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": machine(load_start, "ray"),
                "params": {"trials": args.trials, "reports": args.reports, "sleep_s": SLEEP_S},
                "arms": results,
            },
            indent=2,
        )
    )
    print(f"\nsaved {args.out}")


if __name__ == "__main__":
    main()
