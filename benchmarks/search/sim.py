"""The search benchmark in the simulator: every strategy on every curve problem, many seeds.

    python -m benchmarks.search.sim [--seeds 20] [--problems mislead lcbench-126029 ...]
        [--strategies random+asha topk ...] [--candidate optuna+asha] [--jobs 2]
        [--out benchmarks/results/search-sim.json]

Per problem (``benchmarks.search.curves``): 4 simulated workers and a budget of B = 30 x
max_iterations iterations (30 full-length trials). Random + FIFO gets 30 trials; a strategy
that stops trials early gets 600 and is stopped when it has spent B. Every run but Optuna's own
TPE + HyperbandPruner (an ask/tell loop, ``_optuna_hyperband``) and Syne Tune's schedulers
(``_synetune``) is ``sweeplab.simulate`` of a real `sweeplab.Sweep`, seeded per seed. No Ray
runtime is started. A strategy too slow for every seed runs the first few (its ``seeds``; the
tables say how many).

Measured per problem x strategy x seed, with the problem's noise-free score: the anytime curve
(best so far against iterations spent), the final best, the share of B needed to reach (a)
random + FIFO's final best of the same seed and (b) random + ASHA's median final best, and the
final regret. Then medians over seeds, each strategy's mean rank over the problems (by median
final best), and issue 22's checks of ``--candidate`` against random + ASHA. Prints a table per
problem, the ranks and the checks, and writes the JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import multiprocessing
import os
import platform
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.search import curves
from benchmarks.search._sim_default_checks import default_checks
from benchmarks.search._sim_measures import (
    against_the_field,
    analyse_problem,
    anytime_steps,
    checks,
)
from benchmarks.search._sim_ranks import mean_ranks
from benchmarks.search._sim_strategies import (
    BEST_GRACE,
    DEFAULT_SET,
    REFERENCES,
    SKIPPED_VARIANTS,
    STRATEGIES,
    SYNETUNE_BOHB_SEEDS,
    SYNETUNE_SLOW_SEEDS,
    SimStrategy,
)
from benchmarks.search._sim_tables import print_tables

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "search-sim.json"
WORKERS = 4
BUDGET_TRIALS = 30  # B = 30 full-length trials' iterations; random + FIFO's trial count
# Trials an early-stopping strategy may make; the budget stops it first. ASHA (grace 1,
# reduction factor 3) spends about 3.3 iterations per trial at 52 iterations: ~470 trials.
EARLY_STOPPING_TRIALS = BUDGET_TRIALS * 20
DEFAULT_CANDIDATE = "optuna+adaptive-asha"
FULL_SEEDS = 20  # the run, for the time extrapolation
TIME_GOAL_S = 900.0  # the default run (issue 42: Syne Tune's baselines included), on 2 CPUs

__all__ = [
    "budget_of",
    "curve_sweep",
    "main",
    "run_one",
    "runs_on",
    "seeds_of",
    "strategies_to_run",
]


def budget_of(problem: curves.CurveProblem) -> int:
    """The problem's iteration budget B."""
    return BUDGET_TRIALS * problem.max_iterations


def _no_training(config: dict[str, Any]) -> None:
    """The Sweep's training function: never called, the curve stands in for training."""


def trial_limit(strategy: SimStrategy) -> int:
    """The most trials `strategy` may start: the budget's, or an early stopper's."""
    return EARLY_STOPPING_TRIALS if strategy.early_stopping else BUDGET_TRIALS


def seeds_of(strategy: SimStrategy, seeds: Sequence[int], *, capped: bool = True) -> list[int]:
    """The seeds of `seeds` that `strategy` runs: its first ``strategy.seeds``, or all (always
    all when not `capped`)."""
    return list(seeds if strategy.seeds is None or not capped else seeds[: strategy.seeds])


def runs_on(strategy: SimStrategy, problem_name: str) -> bool:
    """Whether `strategy` runs on the problem: every strategy on an LCBench task, those not
    ``lcbench_only`` on the synthetic problems too."""
    return problem_name.startswith("lcbench-") or not strategy.lcbench_only


def warm_up(problem_names: Sequence[str], strategies: Sequence[SimStrategy] = ()) -> None:
    """Imports what the runs use and loads the LCBench graph once, so that no run's time
    includes them; quiets Optuna's one log line per study and Ray's define-by-run timing
    warning (sweeplab's Optuna searcher builds a study per suggestion). Then each strategy's
    own warm-up."""
    import optuna
    import ray.tune.schedulers
    import ray.tune.search.optuna  # noqa: F401

    import sweeplab.simulation  # noqa: F401
    from sweeplab.space import Space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", message="Define-by-run function passed in the `space`")
    for name in problem_names:
        if name.startswith("lcbench-"):
            problem = curves.problem(name)
            (config,) = Space(problem.space).sample(seed=0)
            problem.curve(config, 1)
            break
    for strategy in strategies:
        if strategy.warm_up is not None:
            strategy.warm_up()


def run_one(problem_name: str, strategy: SimStrategy, seed: int) -> dict[str, Any]:
    """One seeded run of `strategy` on a problem: what the JSON keeps of it (not its reports).

    A run that raises is recorded with its error, not re-raised.
    """
    problem = curves.problem(problem_name)
    budget = budget_of(problem)
    limit = trial_limit(strategy)
    started = time.perf_counter()
    try:
        if strategy.loop is not None:
            out = strategy.loop(problem, seed=seed, budget=budget, workers=WORKERS, trials=limit)
            reports, trials, lengths = out["reports"], out["trials"], out["trial_reports"]
        else:
            reports, trials, lengths = _simulate(problem, strategy, seed, budget, limit)
    except Exception as error:  # one broken run must not lose the others
        return {
            "error": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc(limit=6),
            "run_s": round(time.perf_counter() - started, 3),
        }
    steps = anytime_steps(reports, mode=problem.mode, budget=budget)
    within = reports[:budget]
    return {
        "steps": [[spent, round(seconds, 3), best] for spent, seconds, best in steps],
        "final_best": steps[-1][2] if steps else None,
        "budget_used": len(within),
        "simulated_s": round(within[-1][0], 3) if within else 0.0,
        "trials": trials,
        "trials_full_length": sum(1 for n in lengths if n >= problem.max_iterations),
        "run_s": round(time.perf_counter() - started, 3),
    }


def curve_sweep(
    problem: curves.CurveProblem, *, searcher: Any, scheduler: Any, num_trials: int, name: str
) -> Any:
    """The `sweeplab.Sweep` that searches `problem` in `sweeplab.simulate` (its training function
    is never called: the curve stands in for training)."""
    import sweeplab

    return sweeplab.Sweep(
        name=name,
        train_func=_no_training,
        space=problem.space,
        metric=problem.metric,
        mode=problem.mode,
        searcher=searcher,
        scheduler=scheduler,
        num_trials=num_trials,
        max_iterations=problem.max_iterations,
    )


def _simulate(
    problem: curves.CurveProblem, strategy: SimStrategy, seed: int, budget: int, trials: int
) -> tuple[list[tuple[float, float]], int, list[int]]:
    import sweeplab

    sweep = curve_sweep(
        problem,
        searcher=strategy.searcher(problem),
        scheduler=strategy.scheduler(problem),
        num_trials=trials,
        name="search-sim",
    )
    sim = sweeplab.simulate(
        sweep, problem.curve, workers=WORKERS, seed=seed, budget_iterations=budget
    )
    reports = [(r.time_s, float(r.metrics[problem.score])) for r in sim.reports]
    return reports, len(sim.trials), [t.stopped_at for t in sim.trials]


def _run_task(task: tuple[str, SimStrategy, int]) -> tuple[str, str, int, dict[str, Any]]:
    problem_name, strategy, seed = task
    return problem_name, strategy.name, seed, run_one(problem_name, strategy, seed)


def strategies_to_run(names: Sequence[str] | None, candidate: str) -> list[SimStrategy]:
    """The strategies of `names` (all when None), with the references and the candidate.

    ``random+asha-best-grace`` brings the grace search it is chosen from.

    Raises:
        SystemExit: If a name is not a strategy.
    """
    known = [*STRATEGIES, BEST_GRACE]
    wanted = [*DEFAULT_SET, candidate] if names is None else [*REFERENCES, candidate, *names]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"unknown strategies {unknown}; the strategies are {known}.")
    if names is None or BEST_GRACE in wanted:
        wanted += [name for name in STRATEGIES if name.startswith("random+asha-g")]
    return [STRATEGIES[name] for name in STRATEGIES if name in wanted]


def _split(values: Iterable[str] | None) -> list[str] | None:
    """Names given space- or comma-separated."""
    if values is None:
        return None
    return [part for value in values for part in value.split(",") if part]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.search.sim",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("--seeds", type=int, default=FULL_SEEDS, help="seeds 0..N-1")
    parser.add_argument("--problems", nargs="+", help=f"default: all of {sorted(curves.PROBLEMS)}")
    parser.add_argument(
        "--strategies", nargs="+", help=f"default: {list(DEFAULT_SET)}; any of {list(STRATEGIES)}"
    )
    parser.add_argument(
        "--all-seeds",
        action="store_true",
        help="run the slow Syne Tune baselines on every seed too (by default BOHB runs "
        f"{SYNETUNE_BOHB_SEEDS}, BORE and CQR {SYNETUNE_SLOW_SEEDS})",
    )
    parser.add_argument("--candidate", default=DEFAULT_CANDIDATE, help="the strategy checked")
    parser.add_argument("--jobs", type=int, default=2, help="processes (1: in this one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark, prints its tables and writes its JSON; returns the report."""
    args = _parser().parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        raise SystemExit("--seeds and --jobs must be >= 1.")
    if args.candidate not in STRATEGIES:
        raise SystemExit(f"--candidate must be one of {list(STRATEGIES)}, not {args.candidate!r}.")
    problem_names = _split(args.problems) or list(curves.PROBLEMS)
    try:
        problems = {name: curves.problem(name) for name in problem_names}
    except ValueError as error:
        raise SystemExit(str(error)) from None
    strategies = strategies_to_run(_split(args.strategies), args.candidate)
    seeds = list(range(args.seeds))
    # Model-based strategies first: the slowest tasks start while the pool is full.
    slow_first = sorted(strategies, key=lambda s: not s.model_based)
    capped = not args.all_seeds
    tasks = [
        (p, s, seed)
        for s in slow_first
        for p in problems
        if runs_on(s, p)
        for seed in seeds_of(s, seeds, capped=capped)
    ]

    report: dict[str, Any] = {
        "config": _config(args, problems, strategies, seeds, capped=capped),
        "problems": {
            name: {
                "title": problem.title,
                "budget": budget_of(problem),
                "max_iterations": problem.max_iterations,
                "metric": problem.metric,
                "score": problem.score,
                "mode": problem.mode,
                "optimum": problem.optimum,
                "runs": {s.name: {} for s in strategies if runs_on(s, name)},
            }
            for name, problem in problems.items()
        },
    }
    started = time.perf_counter()
    print(
        f"search benchmark in the simulator: {len(problems)} problems x {len(strategies)} "
        f"strategies x {len(seeds)} seeds = {len(tasks)} runs on {args.jobs} process(es)",
        flush=True,
    )
    done_groups = 0
    groups = sum(1 for p in problems for s in strategies if runs_on(s, p))
    expected = {s.name: len(seeds_of(s, seeds, capped=capped)) for s in strategies}
    for problem_name, strategy_name, seed, run in _execute(tasks, args.jobs, strategies):
        by_seed = report["problems"][problem_name]["runs"][strategy_name]
        by_seed[str(seed)] = run
        if len(by_seed) == expected[strategy_name]:
            done_groups += 1
            print(_progress_line(done_groups, groups, problem_name, strategy_name, by_seed))
            sys.stdout.flush()
    wall_s = time.perf_counter() - started

    for result in report["problems"].values():
        result["runs"] = {
            name: dict(sorted(by_seed.items(), key=lambda item: int(item[0])))
            for name, by_seed in result["runs"].items()
        }
        analyse_problem(result)
    report["ranks"] = mean_ranks(report["problems"])
    report["checks"] = checks(report["problems"], args.candidate)
    report["field"] = against_the_field(report["problems"], args.candidate)
    report["default_checks"] = default_checks(report, args.candidate)
    report["timing"] = _timing(report, wall_s, args.jobs)

    print_tables(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(_finite(report), indent=1) + "\n")
    print(f"wrote {args.out}")
    return report


def _execute(
    tasks: list[tuple[str, SimStrategy, int]], jobs: int, strategies: Sequence[SimStrategy]
) -> Iterable[tuple[str, str, int, dict[str, Any]]]:
    problems = sorted({problem for problem, _, _ in tasks})
    if jobs == 1:
        warm_up(problems, strategies)
        yield from map(_run_task, tasks)
        return
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs, initializer=warm_up, initargs=(problems, strategies)) as pool:
        yield from pool.imap_unordered(_run_task, tasks, chunksize=1)


def _progress_line(
    done: int, total: int, problem: str, strategy: str, by_seed: dict[str, dict[str, Any]]
) -> str:
    finals = [r["final_best"] for r in by_seed.values() if r.get("final_best") is not None]
    errors = sum(1 for r in by_seed.values() if r.get("error"))
    seconds = sum(r.get("run_s", 0.0) for r in by_seed.values())
    final = f"median final {statistics.median(finals):.4g}" if finals else "no result"
    failed = f", {errors} errors" if errors else ""
    return (
        f"[{done:>3}/{total}] {problem:<16} {strategy:<28} {len(by_seed)} seeds, {final}, "
        f"{seconds:.1f} s{failed}"
    )


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ["sweeplab", "ray", "optuna", "scipy", "numpy", "onnxruntime", "syne-tune"]:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "missing"
    return out


def _config(
    args: argparse.Namespace,
    problems: dict[str, curves.CurveProblem],
    strategies: list[SimStrategy],
    seeds: list[int],
    *,
    capped: bool,
) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "argv": sys.argv[1:],
        "versions": _versions(),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "seeds": seeds,
        "seeds_capped": {s.name: s.seeds for s in strategies if s.seeds is not None and capped},
        "lcbench_only": [s.name for s in strategies if s.lcbench_only],
        "workers": WORKERS,
        "budget": {name: budget_of(p) for name, p in problems.items()},
        "budget_rule": f"{BUDGET_TRIALS} x max_iterations iterations",
        "trials": {
            "random+fifo and other non-stopping strategies": BUDGET_TRIALS,
            "early-stopping strategies (stopped by the budget)": EARLY_STOPPING_TRIALS,
        },
        "candidate": args.candidate,
        "jobs": args.jobs,
        "strategies": {s.name: s.about for s in strategies},
        "optuna_variants_skipped": SKIPPED_VARIANTS,
        "score": "the problem's noise-free score; every report counts (one report = one "
        "iteration spent)",
    }


def _timing(report: dict[str, Any], wall_s: float, jobs: int) -> dict[str, Any]:
    """This run's time, and the full benchmark's (every problem x strategy x 20 seeds) by
    extrapolation: each run's mean time per problem x strategy, a problem not run taking the
    mean of the problems of its kind (LCBench or synthetic) that were."""
    means: dict[tuple[str, str], float] = {}
    run_s = 0.0
    for problem, result in report["problems"].items():
        for name, by_seed in result["runs"].items():
            seconds = [run["run_s"] for run in by_seed.values() if "run_s" in run]
            run_s += sum(seconds)
            if seconds:
                means[(problem, name)] = statistics.fmean(seconds)

    def kind(problem: str) -> str:
        return "lcbench" if problem.startswith("lcbench-") else "synthetic"

    full_seeds = {name: len(seeds_of(STRATEGIES[name], range(FULL_SEEDS))) for name in DEFAULT_SET}
    by_strategy: dict[str, float] = {name: 0.0 for name in DEFAULT_SET}
    unknown = set()
    for problem in curves.PROBLEMS:
        for name in DEFAULT_SET:
            if not runs_on(STRATEGIES[name], problem):
                continue
            if (problem, name) in means:
                by_strategy[name] += means[(problem, name)] * full_seeds[name]
                continue
            same = [v for (p, s), v in means.items() if s == name and kind(p) == kind(problem)]
            if same:
                by_strategy[name] += statistics.fmean(same) * full_seeds[name]
            else:
                unknown.add(f"{name} on {kind(problem)} problems")
    estimate = sum(by_strategy.values())
    # What the pool costs beyond the runs themselves (start-up, imports), counted once.
    overhead = max(0.0, wall_s - run_s / jobs)
    full_jobs = 2
    full_wall = overhead + estimate / full_jobs
    return {
        "wall_s": round(wall_s, 2),
        "run_s_total": round(run_s, 2),
        "overhead_s": round(overhead, 2),
        "full_run": {
            "what": f"every problem ({len(curves.PROBLEMS)}; Syne Tune's on the LCBench tasks) x "
            f"strategy of the default set ({len(DEFAULT_SET)}) x {FULL_SEEDS} seeds (or its cap) "
            f"on {full_jobs} processes",
            "run_s_total": round(estimate, 1),
            "run_s_by_strategy": {name: round(v, 1) for name, v in by_strategy.items()},
            "wall_s_estimate": round(full_wall, 1),
            "goal_s": TIME_GOAL_S,
            "meets_goal": full_wall <= TIME_GOAL_S if not unknown else None,
            "not_measured": sorted(unknown),
            "note": "per-run times measured in this run, on this machine under its load; "
            "perfect load balance over the processes assumed",
        },
    }


def _finite(value: Any) -> Any:
    """JSON has no infinity or NaN: such a figure (never reached) is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


if __name__ == "__main__":
    main()
