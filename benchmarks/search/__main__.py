"""Search efficiency: how much budget each strategy needs to match random search + FIFO.

    python -m benchmarks.search [--quick] [--seeds 5] [--problems h3,h6,sim,digits]
                                [--out benchmarks/search/results/latest.json]

Every sweep runs through sweeplab's engine (`run_sweep`) on one local Ray started here with
sweeplab's runtime env; one iteration reported is one unit of budget. Random + FIFO gets N trials
of R iterations (budget N x R); early-stopping strategies get more trials and every curve is cut
at N x R. The headline figure per problem and strategy is the fraction of N x R a strategy needs
to reach random + FIFO's final best of the same seed (median over seeds). Prints a table, writes
the JSON to ``--out`` and the plots to ``--images``. See docs/search.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.search._curves import anytime, fraction_to_reach, percentile, summarize
from benchmarks.search._problems import PROBLEMS, Problem
from benchmarks.search._run import ROOT, run_one, start_ray
from benchmarks.search._strategies import (
    BASELINE,
    NAMED_ONLY,
    STRATEGIES,
    VARIANTS,
    Strategy,
)

RESULTS = ROOT / "benchmarks" / "search" / "results"
# Early-stopping strategies get this many times the baseline's trials: ASHA (grace 1, reduction
# factor 3) spends 3-4 iterations per trial at R = 27, so 6 N trials can spend N x R.
TRIAL_FACTOR = 6
WARM_SOURCE_SEED = 1000  # the earlier sweep of a warm start: the same problem, another seed
GOAL = 1 / 3  # Optuna TPE + ASHA should need at most a third of random + FIFO's budget
# Warm start is shown on the simulator and on digits (real training); on Hartmann it is the
# same story told twice more, at a fifth of the benchmark's time.
WARM_PROBLEMS = ("sim", "digits")
# --quick: the two cheapest problems of different kinds, without the two strategies whose
# sweeps restart a trial actor per trial or exploit (minutes each even at the small size).
QUICK_PROBLEMS = ("h3", "sim")
QUICK_SKIPS = ("optuna+hyperband", "random+pbt")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def _versions() -> dict[str, str]:
    out = {}
    for package in ["ray", "optuna", "hyperopt", "mlflow", "torch", "sweeplab"]:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "missing"
    return out


def _strategies_for(problem: Problem, names: Sequence[str] | None) -> list[Strategy]:
    chosen = [s for s in STRATEGIES.values() if problem.pbt or s.scheduler != "pbt"]
    if problem.synthetic:
        chosen += list(VARIANTS.values())
        # ASHA's settings were measured once (docs/search.md); they run only when named.
        chosen += [s for s in NAMED_ONLY.values() if names is not None and s.name in names]
    if names is not None:
        chosen = [s for s in chosen if s.name in names or s is BASELINE]
    return chosen


def _record(run: dict[str, Any], budget: int, iterations: int) -> dict[str, Any]:
    """What the JSON keeps of a run: its anytime steps, not every report."""
    reports = run["reports"]
    steps = anytime(reports, budget)
    within = reports[:budget]
    return {
        "steps": [[b, round(s, 3), score] for b, s, score in steps],
        "budget_used": len(within),
        "seconds_at_budget": round(within[-1][0], 3) if within else None,
        "final_best": steps[-1][2] if steps else None,
        "trials": run["trials"],
        "trials_full_length": sum(1 for n in run["trial_reports"] if n >= iterations),
        "errored": run["errored"],
        "wall_s": round(run["wall_s"], 2),
        "hit_time_limit": run["hit_time_limit"],
    }


def _finite(value: Any) -> Any:
    """JSON has no infinity: a never-reached figure is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _analyse(result: dict[str, Any]) -> None:
    """Targets, fractions and summaries of one problem's runs, in place."""
    budget = result["budget"]
    baseline = result["runs"].get(BASELINE.name, {})
    targets = {
        seed: run["final_best"]
        for seed, run in baseline.items()
        if run.get("final_best") is not None
    }
    result["targets"] = targets
    # The same seed's target is the headline; one target for all seeds (their median) is a
    # second view with less noise from a lucky or unlucky baseline.
    common = percentile(list(targets.values()), 0.5)
    result["common_target"] = common
    summaries: dict[str, Any] = {}
    for name, runs in result["runs"].items():
        fractions, common_fractions = [], []
        for seed, run in runs.items():
            if seed not in targets or "steps" not in run:
                continue
            run["fraction"] = fraction_to_reach(run["steps"], targets[seed], budget)
            run["fraction_common"] = fraction_to_reach(run["steps"], common, budget)
            fractions.append(run["fraction"])
            common_fractions.append(run["fraction_common"])
        finals = [run["final_best"] for run in runs.values() if run.get("final_best") is not None]
        used = [run["budget_used"] / budget for run in runs.values() if "budget_used" in run]
        summaries[name] = {
            **summarize(fractions),
            "errors": sum(1 for run in runs.values() if run.get("error")),
            "final_best_median": statistics.median(finals) if finals else None,
            "budget_used_median": statistics.median(used) if used else None,
            "common_target": summarize(common_fractions),
        }
    result["summary"] = summaries
    warm = result.get("warm")
    if warm:
        cold = result["runs"].get("optuna+asha", {})
        paired: dict[str, list[float | None]] = {
            key: [] for key in ("warm", "cold", "warm_common", "cold_common")
        }
        for seed, run in warm["runs"].items():
            if seed not in targets or "steps" not in run or "steps" not in cold.get(seed, {}):
                continue
            run["fraction"] = fraction_to_reach(run["steps"], targets[seed], budget)
            run["fraction_common"] = fraction_to_reach(run["steps"], common, budget)
            paired["warm"].append(run["fraction"])
            paired["cold"].append(cold[seed].get("fraction"))
            paired["warm_common"].append(run["fraction_common"])
            paired["cold_common"].append(cold[seed].get("fraction_common"))
        warm["summary"] = {key: summarize(values) for key, values in paired.items()}
        warm["summary"]["warm"]["common_target"] = warm["summary"].pop("warm_common")
        warm["summary"]["cold"]["common_target"] = warm["summary"].pop("cold_common")
        runs = [run for run in warm["runs"].values() if "steps" in run]
        finals = [run["final_best"] for run in runs if run.get("final_best") is not None]
        warm["summary"]["warm"]["final_best_median"] = statistics.median(finals) if finals else None
        warm["summary"]["warm"]["budget_used_median"] = (
            statistics.median(run["budget_used"] / budget for run in runs) if runs else None
        )


def _fmt_fraction(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return "never" if math.isinf(value) else f"{value:.2f}"


def _headline_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for problem, result in report["problems"].items():
        for name, summary in result.get("summary", {}).items():
            rows.append({"problem": problem, "strategy": name, **summary})
        warm = result.get("warm", {}).get("summary")
        if warm:
            rows.append(
                {"problem": problem, "strategy": "optuna+asha, warm-started", **warm["warm"]}
            )
    return rows + _pooled_rows(report)


def _pooled_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each strategy over every seed of every synthetic problem it ran on: 15 runs, not 5."""
    synthetic = [n for n in report["problems"] if n in PROBLEMS and PROBLEMS[n].synthetic]
    if len(synthetic) < 2:
        return []
    label = "+".join(synthetic)
    rows = []
    for name in [*STRATEGIES, *VARIANTS, *NAMED_ONLY]:
        results = [report["problems"][n] for n in synthetic]
        if not all(name in r.get("runs", {}) for r in results):
            continue
        runs = [run for r in results for run in r["runs"][name].values() if "steps" in run]
        summary = summarize([run.get("fraction") for run in runs])
        common = summarize([run.get("fraction_common") for run in runs])
        rows.append({"problem": label, "strategy": name, **summary, "common_target": common})
    return rows


def _fmt_common(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "-"
    return f"{_fmt_fraction(summary['median'])}, {summary['reached']}/{summary['seeds']}"


def render(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="fraction of random + FIFO's budget needed to reach its final best")
    columns = ["problem", "strategy", "median", "IQR", "min-max", "reached", "used", "final best"]
    columns.append("common target")
    for column in columns:
        table.add_column(column, justify="left" if column in ("problem", "strategy") else "right")
    for row in rows:
        final = row.get("final_best_median")
        table.add_row(
            row["problem"],
            row["strategy"],
            _fmt_fraction(row["median"]),
            f"{_fmt_fraction(row['q1'])}-{_fmt_fraction(row['q3'])}",
            f"{_fmt_fraction(row['min'])}-{_fmt_fraction(row['max'])}",
            f"{row['reached']}/{row['seeds']}"
            + (f" ({row['errors']} failed)" if row.get("errors") else ""),
            _fmt_fraction(row.get("budget_used_median")),
            "-" if final is None else f"{final:.4f}",
            _fmt_common(row.get("common_target")),
        )
    return table


def _run_safely(label: str, console: Any, **kwargs: Any) -> dict[str, Any] | None:
    begin = time.perf_counter()
    try:
        run = run_one(**kwargs)
    except Exception as exc:  # one failed sweep should not lose the others' results
        console.print(f"  [red]{label} failed[/red]: {type(exc).__name__}: {exc}")
        console.print(traceback.format_exc(limit=3), markup=False)
        return None
    console.print(
        f"  {time.strftime('%H:%M:%S')} {label}: {len(run['reports'])} iterations, "
        f"{run['trials']} trials, {time.perf_counter() - begin:.1f} s"
    )
    return run


def _done(record: dict[str, Any] | None) -> bool:
    return record is not None and "steps" in record


def run_problem(
    problem: Problem,
    seeds: Sequence[int],
    *,
    result: dict[str, Any],
    trials: int,
    iterations: int,
    trial_factor: int,
    strategy_names: Sequence[str] | None,
    warm: bool,
    storage: Path,
    console: Any,
    save: Callable[[], None],
) -> None:
    """Runs the problem's sweeps into ``result`` (runs already in it are kept: ``--resume``)."""
    budget = trials * iterations
    result.update(
        title=problem.title,
        optimum=problem.optimum,
        trials=trials,
        iterations=iterations,
        budget=budget,
    )
    runs = result.setdefault("runs", {})
    for seed in seeds:
        for strategy in _strategies_for(problem, strategy_names):
            if _done(runs.get(strategy.name, {}).get(str(seed))):
                continue
            run = _run_safely(
                f"{problem.name} {strategy.name} seed {seed}",
                console,
                problem=problem,
                strategy=strategy,
                seed=seed,
                trials=strategy.trials(trials, trial_factor),
                iterations=iterations,
                budget=budget,
                storage=storage,
                name=_slug(f"{problem.name}-{strategy.name}-s{seed}"),
            )
            record = {"error": True} if run is None else _record(run, budget, iterations)
            runs.setdefault(strategy.name, {})[str(seed)] = record
            save()
    if warm and "optuna+asha" in runs:
        out = result.setdefault(
            "warm", {"source_seed_offset": WARM_SOURCE_SEED, "runs": {}, "sources": {}}
        )
        for seed in seeds:
            if not _done(out["runs"].get(str(seed))):
                _warm_runs(
                    problem,
                    seed,
                    out,
                    trials=trials * trial_factor,
                    iterations=iterations,
                    budget=budget,
                    storage=storage,
                    console=console,
                )
                save()
    _analyse(result)


def _warm_runs(
    problem: Problem,
    seed: int,
    out: dict[str, Any],
    *,
    trials: int,
    iterations: int,
    budget: int,
    storage: Path,
    console: Any,
) -> None:
    """Optuna TPE + ASHA warm-started from an earlier cold sweep of another seed, into ``out``.

    Both sweeps are tracked into one temporary SQLite store; the warm sweep names the earlier
    one in `warm_start`. The cold comparison is the untracked `optuna+asha` run of the seed.
    """
    source = _slug(f"{problem.name}-cold-source-s{seed}")
    common = {
        "problem": problem,
        "strategy": STRATEGIES["optuna+asha"],
        "trials": trials,
        "iterations": iterations,
        "budget": budget,
        "storage": storage,
        "tracking_uri": f"sqlite:///{storage / 'mlflow.db'}",
    }
    ran = _run_safely(
        f"{problem.name} warm-start source seed {WARM_SOURCE_SEED + seed}",
        console,
        seed=WARM_SOURCE_SEED + seed,
        name=source,
        **common,
    )
    out["sources"][str(seed)] = {"error": True} if ran is None else _record(ran, budget, iterations)
    if ran is None:
        return
    ran = _run_safely(
        f"{problem.name} optuna+asha warm-started seed {seed}",
        console,
        seed=seed,
        name=_slug(f"{problem.name}-warm-s{seed}"),
        warm_start=source,
        **common,
    )
    out["runs"][str(seed)] = {"error": True} if ran is None else _record(ran, budget, iterations)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test of a few minutes: small sizes, h3 and sim, no HyperBand or PBT",
    )
    parser.add_argument("--seeds", type=int, help="seeds per strategy (5; --quick: 2)")
    parser.add_argument(
        "--problems", help=f"comma-separated subset of: {','.join(PROBLEMS)} (--quick: h3,sim)"
    )
    parser.add_argument("--strategies", help="comma-separated subset of the strategies' names")
    parser.add_argument("--trials", type=int, help="random + FIFO's trials N (10; --quick: 6)")
    parser.add_argument("--iterations", type=int, help="iterations R of a trial (27; --quick: 9)")
    parser.add_argument(
        "--trial-factor",
        type=int,
        default=TRIAL_FACTOR,
        help=f"early-stopping strategies get this times N trials ({TRIAL_FACTOR})",
    )
    parser.add_argument(
        "--warm",
        default=",".join(WARM_PROBLEMS),
        help=f"problems with the warm-start runs ({','.join(WARM_PROBLEMS)}; '' for none)",
    )
    parser.add_argument("--out", type=Path, help="the JSON (default results/latest.json)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the finished runs of the JSON at --out and run only the missing ones",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        help="run no sweep: analyse and plot the runs of an earlier JSON again (into --out)",
    )
    parser.add_argument("--images", type=Path, help="folder of the PNGs (default docs/images)")
    args = parser.parse_args(argv)
    if args.quick:
        args.problems = args.problems or ",".join(QUICK_PROBLEMS)
        args.strategies = args.strategies or ",".join(
            name for name in [*STRATEGIES, *VARIANTS] if name not in QUICK_SKIPS
        )
    problems = args.problems.split(",") if args.problems else list(PROBLEMS)
    unknown = set(problems) - set(PROBLEMS)
    if unknown:
        parser.error(f"unknown problem(s): {', '.join(sorted(unknown))}")
    args.problems = problems
    args.warm = [name for name in args.warm.split(",") if name]
    unknown = set(args.warm) - set(PROBLEMS)
    if unknown:
        parser.error(f"unknown problem(s) in --warm: {', '.join(sorted(unknown))}")
    if args.strategies:
        names = args.strategies.split(",")
        unknown = set(names) - set(STRATEGIES) - set(VARIANTS) - set(NAMED_ONLY)
        if unknown:
            parser.error(f"unknown strategies: {', '.join(sorted(unknown))}")
        args.strategies = names
    defaults = {"seeds": (2, 5), "trials": (6, 10), "iterations": (9, 27)}
    for name, (quick, full) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    for name in ("seeds", "trials", "iterations", "trial_factor"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    suffix = "quick" if args.quick else "latest"
    args.out = (args.out or RESULTS / f"{suffix}.json").resolve()
    default_images = RESULTS / "quick-images" if args.quick else ROOT / "docs" / "images"
    args.images = (args.images or default_images).resolve()
    return args


def _new_report(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "quick": args.quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": {
            "seeds": list(range(args.seeds)),
            "trials": args.trials,
            "iterations": args.iterations,
            "trial_factor": args.trial_factor,
            "problems": args.problems,
            "strategies": args.strategies,
            "warm": args.warm,
            "goal": f"optuna+asha needs <= {GOAL:.3f} of random+fifo's budget",
        },
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "versions": _versions(),
        },
        "sessions": [],
        "problems": {},
    }


def _resumed_report(args: argparse.Namespace) -> dict[str, Any]:
    """The JSON at ``--out`` with its finished runs, to run only what it lacks."""
    if not args.out.exists():
        return _new_report(args)
    report: dict[str, Any] = json.loads(args.out.read_text())
    sizes = {key: report["settings"][key] for key in ("trials", "iterations", "trial_factor")}
    wanted = {"trials": args.trials, "iterations": args.iterations}
    wanted["trial_factor"] = args.trial_factor
    if sizes != wanted:
        raise SystemExit(f"--resume: {args.out} was run with {sizes}, not {wanted}.")
    report["settings"]["seeds"] = sorted(set(report["settings"]["seeds"]) | set(range(args.seeds)))
    return report


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    args = parse_args(argv)
    console = Console(width=140)
    if args.from_json:
        earlier: dict[str, Any] = json.loads(args.from_json.read_text())
        for result in earlier["problems"].values():
            _analyse(result)
        return _finish(earlier, args, console)
    report = _resumed_report(args) if args.resume else _new_report(args)
    session: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg_start": os.getloadavg(),
    }
    report["sessions"].append(session)
    console.print(f"load average at start: {os.getloadavg()}")
    begin = time.perf_counter()

    def save() -> None:  # after every sweep: a crash (or a lost Ray) keeps what was run
        session["seconds"] = round(time.perf_counter() - begin, 1)
        _write(report, args.out)

    with tempfile.TemporaryDirectory(prefix="sweeplab-search-bench-") as tmp:
        os.chdir(tmp)  # MLflow's and Ray's side files land in the temporary folder
        import ray

        started_here = not ray.is_initialized()  # a caller's Ray (a test's) is used as it is
        if started_here:
            start_ray()
        for name in args.problems:
            console.print(f"[bold]{name}[/bold]: {PROBLEMS[name].title}")
            run_problem(
                PROBLEMS[name],
                list(range(args.seeds)),
                result=report["problems"].setdefault(name, {}),
                trials=args.trials,
                iterations=args.iterations,
                trial_factor=args.trial_factor,
                strategy_names=args.strategies,
                warm=name in args.warm,
                storage=Path(tmp) / "runs",
                console=console,
                save=save,
            )
        if started_here:
            ray.shutdown()
        os.chdir(ROOT)
    session["loadavg_end"] = os.getloadavg()
    session["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    save()
    return _finish(report, args, console)


def _finish(report: dict[str, Any], args: argparse.Namespace, console: Any) -> int:
    """The table, the plots and the JSON of a finished (or reloaded) benchmark."""
    report["headline"] = _headline_rows(report)
    console.print(render(report["headline"]))
    from benchmarks.search._plots import plot_all

    report["images"] = [str(p) for p in plot_all(report, args.images)]
    _write(report, args.out)
    for session in report.get("sessions", []):
        console.print(
            f"session {session['started']}: {session.get('seconds', 0):.0f} s; load average "
            f"at start {session['loadavg_start']}, at end {session.get('loadavg_end')}"
        )
    console.print(f"wrote {args.out} and {len(report['images'])} PNG(s) in {args.images}")
    return 0


def _write(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Compact: the anytime curves make an indented file several times larger, for no reader.
    compact = json.dumps(_finite(report), separators=(",", ":"), default=str)
    path.write_text(compact + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
