"""A group per trial (``reuse_groups=False``) beside warm slots, on the trial loop.

python -m benchmarks.group_per_trial [--trials 6] [--arms loop,slots]
    [--out benchmarks/results/group_per_trial.json]

Each arm runs the same sweep in a fresh process, one after the other, untracked: 2-worker
trials of 4 reports x 0.2 s, FIFO, random search, on a local Ray with 2 CPUs (one trial at a
time). `loop` runs it with a group per trial (a slot started for each run and shut when the
run leaves), `slots` the same trials on warm slots (``reuse_groups=True``). For each arm: the
sweep's wall time, the trials and how many errored, and each trial's time from its start to its
first report. The ratios are against `loop`, in one run.

`benchmarks/results/group_per_trial.json` of the last run that had a `tune` arm (Ray Tune's
controller, an engine sweeplab no longer has) is kept as it was measured.
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
ARMS = ("loop", "slots")
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "group_per_trial.json"
REPORTS, SLEEP_S = 4, 0.2

SPEC = """
import time

import ray.train

import sweeplab
from sweeplab import uniform


def train_func(config):
    for step in range({reports}):
        time.sleep({sleep})
        ray.train.report({{"loss": (config["x"] - 0.3) ** 2 + 1.0 / (step + 1)}})


sweep = sweeplab.Sweep(
    name="per-trial",
    train_func=train_func,
    space={{"x": uniform(0, 1)}},
    metric="loss",
    mode="min",
    searcher="random",
    scheduler="fifo",
    num_trials={trials},
    max_iterations={reports},
    workers_per_trial=2,
    reuse_groups={reuse},
    seed=0,
)
"""

ARM = """
import json, sys, time
from pathlib import Path

from benchmarks._fresh import sweep_untracked
from sweeplab.engine import SweepCallback

folder = Path(sys.argv[1])
started, first = {}, {}


class Clock(SweepCallback):
    def on_trial_start(self, trial):
        started.setdefault(trial.trial_id, time.perf_counter())

    def on_trial_result(self, trial, result):
        first.setdefault(trial.trial_id, time.perf_counter() - started[trial.trial_id])


outcome, wall = sweep_untracked(folder, [Clock()])
print(json.dumps({"wall_s": wall, "trials": outcome.trials, "errored": outcome.errored,
                  "first_report_s": sorted(first.values())}))
"""


def run_arm(arm: str, trials: int) -> dict[str, Any]:
    """Runs one arm in a fresh process; returns its figures."""
    spec = SPEC.format(reports=REPORTS, sleep=SLEEP_S, trials=trials, reuse=arm == "slots")
    return run_fresh(arm, ARM, spec)


def _callback_check() -> None:
    """The arm's callback names match `SweepCallback` (a renamed hook would time nothing)."""
    from sweeplab.engine import SweepCallback

    for name in ("on_trial_start", "on_trial_result"):
        if not hasattr(SweepCallback, name):
            raise SystemExit(f"SweepCallback has no {name}: update benchmarks/group_per_trial.py")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    arms = chosen_arms(parser, args.arms, ARMS)
    _callback_check()
    load_start = os.getloadavg()
    results: dict[str, Any] = {}
    for arm in arms:
        begin = time.perf_counter()
        results[arm] = run_arm(arm, args.trials)
        print(f"{arm}: {results[arm]['wall_s']:.1f} s ({time.perf_counter() - begin:.1f} s)")
    base = results.get("loop", {}).get("wall_s")
    print(
        f"\n{'arm':<8} {'wall s':>8} {'vs loop':>8} {'errored':>8} {'first report s (median)':>24}"
    )
    for arm, r in results.items():
        ratio = f"{r['wall_s'] / base:.2f}" if base else "-"
        firsts = r["first_report_s"]
        median = sorted(firsts)[len(firsts) // 2] if firsts else float("nan")
        print(f"{arm:<8} {r['wall_s']:>8.1f} {ratio:>8} {r['errored']:>8} {median:>24.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": machine(load_start, "ray"),
                "params": {"trials": args.trials, "reports": REPORTS, "sleep_s": SLEEP_S},
                "arms": results,
            },
            indent=2,
        )
    )
    print(f"\nsaved {args.out}")


if __name__ == "__main__":
    main()
