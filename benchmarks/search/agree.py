"""Real Ray against the simulator: the same strategies on the same problems, ranked the same way?

    python -m benchmarks.search.agree [--seeds 5] [--sim-seeds 20] [--problems h3 h6 sim]
        [--strategies random+fifo random+asha ...] [--digits-seeds 3]
        [--out benchmarks/results/search-agree.json]

The search benchmark decides in the simulator (``python -m benchmarks.search.sim``). This run
checks that the decision carries over to real sweeps. On the problems both backends run (h3, h6
and sim: the real-Ray trials compute the very curves the simulator reads, noise included), each
strategy runs as the real-Ray benchmark runs it (``benchmarks.search``: N = 10 trials of R = 27
iterations for random + FIFO, 6 N for a strategy that stops early, every curve cut at N x R),
once through `run_sweep` on one local Ray (2 CPUs, so 2 trials at a time) and once in
`sweeplab.simulate` with the same `Sweep`, 2 workers and the same budget.

Per problem and seed the strategies are ranked by final best (the noise-free score, lower is
better; ties share a rank), and each strategy's ranks are averaged over seeds. The figure is
Kendall's tau between the real-Ray mean ranks and the simulator's, on the same seeds and on
``--sim-seeds`` seeds, with the pairs of strategies that swap order; and per strategy, the seeds
whose final best is the same in both (the same trials found it). Digits (real training,
which the simulator cannot stand in for) runs on real Ray only, at ``--digits-seeds`` seeds: the
integration check of a real model. Prints the tables and writes the JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.search import curves
from benchmarks.search._problems import PROBLEMS
from benchmarks.search._strategies import BASELINE, NAMED_ONLY, STRATEGIES, Strategy

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "search-agree.json"
TRIALS = 10  # N: random + FIFO's trials, as in the real-Ray benchmark
ITERATIONS = 27  # R
TRIAL_FACTOR = 6  # an early-stopping strategy gets 6 N trials
WORKERS = 2  # the trials a 2-CPU local Ray runs at once
PROBLEM_NAMES = ("h3", "h6", "sim")  # both backends compute these curves
DEFAULT_STRATEGIES = (
    "random+fifo",
    "random+asha",
    "random+adaptive-asha",
    "optuna+asha",
    "optuna+adaptive-asha",
    "defaults",  # a Sweep that names no strategy
)
DIGITS_STRATEGIES = ("random+fifo", "random+asha", "optuna+asha")

__all__ = ["kendall_tau", "main", "mean_ranks", "rank_seed"]


def _strategy(name: str) -> Strategy:
    known = {**STRATEGIES, **NAMED_ONLY}
    if name not in known:
        raise SystemExit(f"unknown strategy {name!r}; the strategies are {sorted(known)}.")
    return known[name]


def rank_seed(finals: Mapping[str, float]) -> dict[str, float]:
    """Ranks of one seed's final bests (1 = lowest); ties share their mean rank."""
    ordered = sorted(finals, key=lambda name: finals[name])
    ranks: dict[str, float] = {}
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and finals[ordered[end + 1]] == finals[ordered[start]]:
            end += 1
        for name in ordered[start : end + 1]:
            ranks[name] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def mean_ranks(finals: Mapping[str, Mapping[int, float]], seeds: Sequence[int]) -> dict[str, float]:
    """Each strategy's rank averaged over `seeds` (every strategy must have every seed)."""
    totals = dict.fromkeys(finals, 0.0)
    for seed in seeds:
        for name, rank in rank_seed({name: runs[seed] for name, runs in finals.items()}).items():
            totals[name] += rank
    return {name: total / len(seeds) for name, total in totals.items()}


def kendall_tau(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[float, list[list[str]]]:
    """Kendall's tau-a between two scorings of the same names, and the pairs they order
    oppositely (a pair tied in either counts as neither agreeing nor swapped)."""
    names = sorted(a)
    agree = swap = 0
    swapped: list[list[str]] = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            product = (a[first] - a[second]) * (b[first] - b[second])
            if product > 0:
                agree += 1
            elif product < 0:
                swap += 1
                swapped.append([first, second])
    pairs = len(names) * (len(names) - 1) // 2
    return (agree - swap) / pairs if pairs else math.nan, swapped


def simulate_final(problem_name: str, strategy: Strategy, seed: int) -> float:
    """The final best score of one strategy and seed in `sweeplab.simulate`."""
    import sweeplab
    from benchmarks.search.sim import curve_sweep

    problem = curves.problem(problem_name)
    assert problem.max_iterations == ITERATIONS  # the real-Ray benchmark's R
    budget = TRIALS * ITERATIONS
    sweep = curve_sweep(
        problem,
        searcher=strategy.searcher,
        scheduler=strategy.make_scheduler(ITERATIONS),
        num_trials=strategy.trials(TRIALS, TRIAL_FACTOR),
        name="search-agree",
    )
    sim = sweeplab.simulate(
        sweep, problem.curve, workers=WORKERS, seed=seed, budget_iterations=budget
    )
    return min(float(r.metrics[problem.score]) for r in sim.reports[:budget])


def ray_final(
    problem_name: str, strategy: Strategy, seed: int, storage: Path
) -> tuple[float, float]:
    """The final best score of one strategy and seed on real Ray, and the sweep's seconds."""
    from benchmarks.search._run import run_one

    budget = TRIALS * ITERATIONS
    run = run_one(
        PROBLEMS[problem_name],
        strategy,
        seed,
        trials=strategy.trials(TRIALS, TRIAL_FACTOR),
        iterations=ITERATIONS,
        budget=budget,
        storage=storage,
        name=f"agree-{problem_name}-{strategy.name.replace('+', '-')}-s{seed}",
    )
    return min(score for _, score in run["reports"][:budget]), float(run["wall_s"])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.search.agree",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("--seeds", type=int, default=5, help="real-Ray seeds 0..N-1")
    parser.add_argument("--sim-seeds", type=int, default=20, help="simulated seeds 0..N-1")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEM_NAMES))
    parser.add_argument("--strategies", nargs="+", default=list(DEFAULT_STRATEGIES))
    parser.add_argument("--digits-seeds", type=int, default=3, help="0: no digits runs")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--reanalyse", action="store_true", help="run nothing: analyse the JSON at --out again"
    )
    return parser


def _print(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs both backends, prints the comparison and writes the JSON; returns the report."""
    args = _parser().parse_args(argv)
    if args.reanalyse:
        earlier: dict[str, Any] = json.loads(args.out.read_text())
        analyse(earlier)
        _print_tables(earlier)
        args.out.write_text(json.dumps(earlier, indent=1, default=str) + "\n")
        return earlier
    if args.seeds < 2 or args.sim_seeds < args.seeds or args.digits_seeds < 0:
        raise SystemExit("`2 <= --seeds <= --sim-seeds` and `--digits-seeds >= 0` must hold.")
    names = list(dict.fromkeys([BASELINE.name, *args.strategies]))
    strategies = [_strategy(name) for name in names]
    for problem in args.problems:
        if problem not in PROBLEM_NAMES:
            raise SystemExit(f"--problems: both backends run only {list(PROBLEM_NAMES)}.")
    started = time.perf_counter()
    report: dict[str, Any] = {
        "config": {
            "trials": TRIALS,
            "iterations": ITERATIONS,
            "trial_factor": TRIAL_FACTOR,
            "workers": WORKERS,
            "seeds": args.seeds,
            "sim_seeds": args.sim_seeds,
            "strategies": names,
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        },
        "problems": {},
    }
    from benchmarks.search.sim import warm_up

    warm_up(args.problems)
    sim_begin = time.perf_counter()
    simulated: dict[str, dict[str, dict[int, float]]] = {}
    for problem in args.problems:
        simulated[problem] = {
            s.name: {seed: simulate_final(problem, s, seed) for seed in range(args.sim_seeds)}
            for s in strategies
        }
    report["simulator_s"] = round(time.perf_counter() - sim_begin, 1)
    _print(f"simulator: {report['simulator_s']} s for every problem, strategy and seed")

    from benchmarks.search._run import start_ray

    start_ray()
    real: dict[str, dict[str, dict[int, float]]] = {}
    walls: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="sweeplab-agree-") as folder:
        storage = Path(folder)
        for problem in args.problems:
            real[problem] = {s.name: {} for s in strategies}
            walls[problem] = {s.name: [] for s in strategies}
            for seed in range(args.seeds):
                for strategy in strategies:
                    final, wall = ray_final(problem, strategy, seed, storage)
                    real[problem][strategy.name][seed] = final
                    walls[problem][strategy.name].append(wall)
                    _print(f"  {problem} {strategy.name} seed {seed}: {final:.4g} in {wall:.1f} s")
        digits: dict[str, dict[int, float]] = {}
        digit_strategies = [_strategy(name) for name in DIGITS_STRATEGIES]
        for seed in range(args.digits_seeds):
            for strategy in digit_strategies:
                final, wall = ray_final("digits", strategy, seed, storage)
                digits.setdefault(strategy.name, {})[seed] = final
                _print(f"  digits {strategy.name} seed {seed}: {final:.4g} in {wall:.1f} s")

    report["raw"] = {
        problem: {
            name: {
                "ray": real[problem][name],
                "sim": simulated[problem][name],
                "ray_wall_s": walls[problem][name],
            }
            for name in names
        }
        for problem in args.problems
    }
    if digits:
        report["digits"] = {
            name: {"finals": runs, "median_final": statistics.median(runs.values())}
            for name, runs in digits.items()
        }
    analyse(report)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    _print_tables(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    _print(f"wrote {args.out}; the whole run took {report['wall_s']} s")
    return report


def _by_seed(runs: Mapping[Any, float]) -> dict[int, float]:
    return {int(seed): value for seed, value in runs.items()}  # JSON keeps seeds as strings


def analyse(report: dict[str, Any]) -> None:
    """Fills ``report["problems"]`` and ``report["pooled"]`` from its raw finals."""
    config = report["config"]
    same_seeds = list(range(config["seeds"]))
    all_seeds = list(range(config["sim_seeds"]))
    names = config["strategies"]
    pooled_real: dict[str, float] = dict.fromkeys(names, 0.0)
    pooled_sim: dict[str, float] = dict.fromkeys(names, 0.0)
    report["problems"] = {}
    for problem, raw in report["raw"].items():
        real = {name: _by_seed(raw[name]["ray"]) for name in names}
        sim = {name: _by_seed(raw[name]["sim"]) for name in names}
        ray_ranks = mean_ranks(real, same_seeds)
        sim_same = mean_ranks(sim, same_seeds)
        sim_all = mean_ranks(sim, all_seeds)
        tau_same, swapped_same = kendall_tau(ray_ranks, sim_same)
        tau_all, swapped_all = kendall_tau(ray_ranks, sim_all)
        # The noise of --seeds seeds: the simulator's own ranks on them against all its seeds.
        tau_noise, swapped_noise = kendall_tau(sim_same, sim_all)
        for name in names:
            pooled_real[name] += ray_ranks[name]
            pooled_sim[name] += sim_all[name]
        report["problems"][problem] = {
            "strategies": {
                name: {
                    "ray_median_final": statistics.median(real[name].values()),
                    "ray_mean_rank": ray_ranks[name],
                    "sim_median_final_same_seeds": statistics.median(
                        sim[name][seed] for seed in same_seeds
                    ),
                    "sim_mean_rank_same_seeds": sim_same[name],
                    "sim_mean_rank": sim_all[name],
                    "ray_wall_s_median": statistics.median(raw[name]["ray_wall_s"]),
                    # Seeds whose final best is the simulator's exactly: the same trials
                    # reached it (they differ where results arrived in another order).
                    "same_final_seeds": sum(
                        real[name][seed] == sim[name][seed] for seed in same_seeds
                    ),
                }
                for name in names
            },
            "tau_same_seeds": tau_same,
            "swapped_same_seeds": swapped_same,
            "tau": tau_all,
            "swapped": swapped_all,
            "tau_sim_seeds_against_all": tau_noise,
            "swapped_sim_seeds_against_all": swapped_noise,
        }
    tau_pooled, swapped_pooled = kendall_tau(pooled_real, pooled_sim)
    report["pooled"] = {"tau": tau_pooled, "swapped": swapped_pooled}


def _print_tables(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width))
    config = report["config"]
    for problem, result in report["problems"].items():
        table = Table(
            title=f"{problem}: real Ray ({config['seeds']} seeds) against the simulator "
            f"(the same seeds, and {config['sim_seeds']}); mean rank over seeds, 1 = best",
            title_justify="left",
        )
        for column in (
            "strategy",
            "Ray median final",
            "Ray rank",
            "sim rank (same seeds)",
            f"sim rank ({config['sim_seeds']} seeds)",
            "same final",
            "Ray s/sweep",
        ):
            table.add_column(column, justify="left" if column == "strategy" else "right")
        for name, row in result["strategies"].items():
            table.add_row(
                name,
                f"{row['ray_median_final']:.4g}",
                f"{row['ray_mean_rank']:.2f}",
                f"{row['sim_mean_rank_same_seeds']:.2f}",
                f"{row['sim_mean_rank']:.2f}",
                f"{row['same_final_seeds']}/{config['seeds']}",
                f"{row['ray_wall_s_median']:.1f}",
            )
        console.print(table)
        console.print(
            f"Kendall's tau, Ray against the simulator: {result['tau_same_seeds']:.2f} on the "
            f"same seeds (swapped: {result['swapped_same_seeds'] or 'none'}), {result['tau']:.2f} "
            f"against {config['sim_seeds']} seeds (swapped: {result['swapped'] or 'none'}); "
            f"the simulator's own ranks on the same seeds against its {config['sim_seeds']}: "
            f"{result['tau_sim_seeds_against_all']:.2f}"
        )
    pooled = report["pooled"]
    console.print(
        f"Pooled over the problems (sum of mean ranks): tau {pooled['tau']:.2f}, swapped: "
        f"{pooled['swapped'] or 'none'}"
    )
    if "digits" in report:
        console.print(
            "digits on real Ray, median final validation loss: "
            + ", ".join(f"{k} {v['median_final']:.4g}" for k, v in report["digits"].items())
        )


if __name__ == "__main__":
    main(sys.argv[1:])
