"""How fast `sweeplab.simulate` runs a large sweep: 1,000 ASHA trials on 4 simulated workers.

    python benchmarks/simulate_speed.py [--trials 1000] [--repeats 3]

Prints a table and writes benchmarks/results/simulate_speed.json. The goal (issue 22): a
1,000-trial ASHA sweep (max_iterations 27, random searcher) simulates in 10 s or less. The
first call also imports Ray Tune's library; that import is timed apart.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "simulate_speed.json"
GOAL_S = 10.0


def train_func(config: dict[str, Any]) -> None:
    """Never called: the simulator trains nothing."""


def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    """A saturating curve whose early ranks mislead a little; 20-40 s per iteration."""
    final = (math.log10(config["lr"]) + 2.0) ** 2 + config["width"] / 512
    loss = final + config["warmup"] / iteration
    return {"loss": loss}, 20.0 + 20.0 * config["warmup"]


def make_sweep(trials: int) -> Any:
    import sweeplab
    from sweeplab import loguniform, randint, uniform

    return sweeplab.Sweep(
        name="simulate-speed",
        train_func=train_func,
        space={"lr": loguniform(1e-4, 1.0), "width": randint(16, 512), "warmup": uniform(0, 1)},
        metric="loss",
        mode="min",
        searcher="random",
        scheduler="asha",
        num_trials=trials,
        max_iterations=27,
        seed=0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    from ray.tune.schedulers import ASHAScheduler  # noqa: F401  (Tune's library, not a runtime)

    import sweeplab

    import_s = time.perf_counter() - start
    sweep = make_sweep(args.trials)
    runs = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        sim = sweeplab.simulate(sweep, curve, workers=4)
        runs.append(time.perf_counter() - start)
    stopped = sum(t.status == "stopped" for t in sim.trials)
    row = {
        "trials": len(sim.trials),
        "max_iterations": sweep.max_iterations,
        "workers": 4,
        "scheduler": "asha",
        "searcher": "random",
        "iterations": sim.iterations,
        "stopped_early": stopped,
        "simulated_wall_s": sim.wall_s,
        "seconds": runs,
        "median_s": statistics.median(runs),
        "import_s": import_s,
        "goal_s": GOAL_S,
        "meets_goal": statistics.median(runs) <= GOAL_S,
    }
    table = Table(title=f"sweeplab.simulate: {args.trials} ASHA trials, 4 workers")
    for column in ("trials", "iterations", "stopped early", "median s", "runs s", "import s"):
        table.add_column(column, justify="right")
    table.add_row(
        str(row["trials"]),
        str(row["iterations"]),
        str(stopped),
        f"{row['median_s']:.2f}",
        " ".join(f"{s:.2f}" for s in runs),
        f"{import_s:.2f}",
    )
    Console().print(table)
    document = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": [row],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
