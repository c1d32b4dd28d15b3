"""The `sweeplab` command.

Exit status: 0 on success, 2 on a bad spec or bad arguments (one line, nothing started, nothing
written), 1 when the sweep itself failed.

The commands that read (`ls`, `best`, `report`, `compare`, `ui`, `status`) write nothing where
what they read is not there: a tracking store that does not exist (which MLflow would create on
opening it), a sweep that is not in it, a spec file or a Ray cluster: exit 2, one line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweeplab.engine import DEFAULT_STORAGE
from sweeplab.errors import SpecError, SweeplabError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, but got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, but got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, but got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sweeplab",
        description="Hyperparameter sweeps of Ray Train trainer groups, tracked in MLflow.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sweep = sub.add_parser("sweep", help="run the sweep a spec file declares")
    sweep.add_argument("spec", type=Path, help="spec file defining `sweep = sweeplab.Sweep(...)`")
    _plan_args(sweep)
    sweep.add_argument(
        "--storage",
        type=Path,
        default=Path(DEFAULT_STORAGE),
        help=f"folder for checkpoints, Tune state and logs (default: ./{DEFAULT_STORAGE})",
    )
    sweep.add_argument(
        "--resume", action="store_true", help="continue the latest interrupted run of this sweep"
    )
    sweep.add_argument("--no-live", action="store_true", help="print no live table")
    sweep.add_argument(
        "--stall-timeout",
        type=_positive_seconds,
        metavar="S",
        help="say what the sweep waits for when no trial reported, started or ended for S "
        "seconds (default: 3 x the longest such silence seen, at least 120)",
    )
    sweep.add_argument(
        "--fail-on-stall", action="store_true", help="end a stalled sweep with exit 1"
    )

    preview = sub.add_parser(
        "preview",
        help="validate a spec and show the plan `sweep` runs with the same flags; starts nothing",
    )
    preview.add_argument("spec", type=Path, help="spec file defining `sweep = sweeplab.Sweep(...)`")
    _plan_args(preview)
    preview.add_argument("--samples", type=_positive_int, default=3, help="configs to sample")

    ls = sub.add_parser("ls", help="list the sweeps in the tracking store")
    ls.add_argument("--json", action="store_true", help="print JSON: a list, one object a sweep")
    _tracking_arg(ls)

    best = sub.add_parser(
        "best", help="the best trial of a sweep; of a multi-objective sweep, its Pareto front"
    )
    best.add_argument("sweep", help="sweep name")
    best.add_argument(
        "--json",
        action="store_true",
        help="print JSON: the best trial; of a multi-objective sweep, its front as a list "
        "(with --pick, the picked front row as an object, null when no trial keeps the rule)",
    )
    best.add_argument(
        "--pick",
        metavar="RULE",
        help="pick again from a multi-objective sweep's recorded front: filters, then the "
        "objective whose best value picks, such as 'latency_ms <= 10, val_loss'",
    )
    _tracking_arg(best)

    report = sub.add_parser("report", help="write a self-contained HTML report of a sweep")
    report.add_argument("sweep", help="sweep name")
    report.add_argument("--out", type=Path, required=True, help="HTML file to write")
    _tracking_arg(report)

    compare = sub.add_parser(
        "compare",
        help="compare sweeps, or the runs of one sweep, in a self-contained HTML file",
    )
    compare.add_argument(
        "sweeps",
        nargs="+",
        metavar="SWEEP",
        help="NAME (its latest run; given alone: every run of it) or NAME@RUN (the run whose "
        "parent run id starts with RUN)",
    )
    compare.add_argument("--out", type=Path, required=True, help="HTML file to write")
    compare.add_argument(
        "--metric", help="compare on this metric (default: the sweeps' shared objective)"
    )
    compare.add_argument(
        "--mode",
        choices=["min", "max"],
        help="with --metric: whether lower or higher is better, when it is no sweep's objective",
    )
    _tracking_arg(compare)

    status = sub.add_parser(
        "status",
        help="the cluster's free resources beside what one trial of a spec needs (reads no "
        "tracking store)",
    )
    status.add_argument("spec", type=Path, nargs="?", help="spec file (optional)")
    status.add_argument("--address", help="Ray cluster address (default: this machine)")
    status.add_argument(
        "--json",
        action="store_true",
        help="print JSON: the nodes and, with a spec, one trial's group and the concurrency",
    )

    ui = sub.add_parser(
        "ui", help="start the MLflow UI on an existing tracking store (127.0.0.1); creates none"
    )
    ui.add_argument(
        "sweep", nargs="?", help="sweep whose training runs to open (default: list every sweep)"
    )
    _tracking_arg(ui)
    ui.add_argument("--port", type=_positive_int, default=5000)
    return parser


def _tracking_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )


def _plan_args(parser: argparse.ArgumentParser) -> None:
    """The flags that change what a sweep runs: `sweep` and `preview` both take them."""
    parser.add_argument("--name", help="sweep name (default: the spec's `name`)")
    _tracking_arg(parser)
    parser.add_argument("--address", help="join an existing Ray cluster (HOST:PORT or 'auto')")
    parser.add_argument("--num-trials", type=_positive_int, help="override the spec's num_trials")
    parser.add_argument(
        "--warm-start",
        metavar="SWEEP",
        help="try the best configs of an earlier sweep first (overrides the spec's warm_start)",
    )
    parser.add_argument(
        "--pick",
        metavar="RULE",
        help="how to pick one trial of a multi-objective sweep's front, such as "
        "'latency_ms <= 10, val_loss' (overrides the spec's pick)",
    )


def _planned_sweep(args: argparse.Namespace, **run: Any) -> tuple[Any, Any]:
    """The spec with `--pick` applied, and the options of `_plan_args` plus `run`'s.

    `sweep` hands both to `run_sweep`; `preview` applies the options as `run_sweep` does.
    """
    from sweeplab.engine import SweepOptions
    from sweeplab.spec import load_spec

    sweep = load_spec(args.spec)
    if args.pick is not None:
        try:
            sweep = sweep.replace(pick=args.pick)
        except SpecError as exc:
            raise SpecError(f"--pick: {exc}") from None
    options = SweepOptions(
        spec_path=args.spec,
        name=args.name,
        tracking_uri=args.tracking_uri,
        address=args.address,
        num_trials=args.num_trials,
        warm_start=args.warm_start,
        **run,
    )
    return sweep, options


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI and returns its exit status."""
    args = _parser().parse_args(argv)
    # The commands download small JSON artifacts (a sweep's space, its best config); MLflow's
    # progress bar for each is noise on stderr. Set the variable to "true" to see it.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    try:
        handler = {
            "sweep": _cmd_sweep,
            "preview": _cmd_preview,
            "ls": _cmd_ls,
            "best": _cmd_best,
            "ui": _cmd_ui,
            "report": _cmd_report,
            "compare": _cmd_compare,
            "status": _cmd_status,
        }[args.command]
        return handler(args)
    except SweeplabError as exc:
        print(f"sweeplab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sweeplab: interrupted; continue with --resume", file=sys.stderr)
        return 130


def _console() -> Any:
    from sweeplab.engine import make_console

    return make_console()


def _cmd_preview(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sweeplab.engine import (
        ResolvedSweep,
        TrialMode,
        apply_options,
        local_nodes,
        plan_resources,
        plan_warm_start,
        trial_plan,
    )
    from sweeplab.strategies import total_trials

    spec, options = _planned_sweep(args)
    sweep = apply_options(spec, options)
    warm_start = plan_warm_start(sweep, args.tracking_uri)  # reads the store, as `sweep` does
    # With --address the sweep reads the cluster's resources once it has joined it; preview
    # joins nothing, so it plans this machine only when the sweep would run on it.
    plan = None if args.address is not None else plan_resources(sweep, local_nodes())
    console = _console()
    console.print(f"[bold]sweep[/bold] {sweep.name}  ({args.spec})")
    if sweep.multi_objective:
        goal = "objectives: " + ", ".join(f"{o.mode} {o.name}" for o in sweep.objectives)
        goal += f" (pick: {sweep.pick})" if sweep.pick else ""
    else:
        goal = f"objective: {sweep.mode} {sweep.metric} (ranked by its {sweep.rank_by} value)"
    console.print(
        f"{goal} · searcher {sweep.searcher_name} · scheduler {sweep.scheduler_name} · "
        f"seed {sweep.seed}"
    )
    if sweep.strategy_note:
        console.print(f"strategy: {sweep.strategy_note}", markup=False, highlight=False)
    space_table = Table(title="search space", box=None, header_style="bold")
    space_table.add_column("parameter")
    space_table.add_column("domain")
    for path, text in sweep.space.describe():
        space_table.add_row(path, text)
    console.print(space_table)
    console.print("[bold]sampled configs[/bold]")
    for config in sweep.space.sample(seed=sweep.seed or 0, n=args.samples):
        console.print(f"  {json.dumps(config, default=str)}", markup=False)
    if warm_start is not None:
        for line in warm_start.lines():
            console.print(line, markup=False, highlight=False)
    mode = ResolvedSweep.trial_mode_of(sweep)
    rungs, budget, summary = trial_plan(
        sweep,
        concurrency=None if plan is None else plan.concurrency,
        waiting_holds_nothing=mode.waiting_holds_nothing,
    )
    trials = total_trials(sweep)
    group = plan.describe_group() if plan is not None else _describe_group(sweep, trials)
    console.print(f"[bold]trial plan[/bold]: {trials} trials; {summary}")
    if rungs:
        rung_table = Table(box=None, header_style="bold")
        for column in ("bracket", "rung (iteration)", "trials reaching it"):
            rung_table.add_column(column, justify="right")
        for rung in rungs:
            rung_table.add_row(str(rung.bracket), str(rung.iteration), str(rung.trials))
        console.print(rung_table)
    console.print(
        f"budget: at most {budget} iterations in all "
        f"(without early stopping: {trials * sweep.max_iterations})"
    )
    console.print(
        f"[bold]one trial[/bold]: {group}, placement "
        f"{sweep.placement_strategy}; metrics from {sweep.metrics_from}"
    )
    if plan is None:
        limit = min(trials, sweep.max_concurrent_trials or trials)
        console.print(
            f"[bold]concurrency[/bold]: at most {limit} trial(s) at once, as many as the Ray "
            f"cluster at {args.address} holds: the sweep reads its resources when it starts "
            f"(preview connects to nothing; `sweeplab status {args.spec} --address "
            f"{args.address}` shows them now)"
        )
        concurrency = limit
    else:
        cluster = ", ".join(f"{v:g} {k}" for k, v in sorted(plan.cluster.items()))
        console.print(
            f"[bold]concurrency[/bold]: {plan.concurrency} trial(s) at once on this machine "
            f"({cluster})"
        )
        concurrency = plan.concurrency
    groups = mode.describe(workers_per_trial=sweep.workers_per_trial, concurrency=concurrency)
    if plan is None and mode is TrialMode.WARM_SLOT:
        groups += "; at most: one slot per trial the cluster runs at once"
    console.print(f"[bold]trainer groups[/bold]: {groups}")
    return EXIT_OK


def _describe_group(sweep: Any, trials: int) -> str:
    """One trial's trainer group in words, as the resource plan says it, without a cluster."""
    from sweeplab.engine import ResourcePlan

    # The group is the spec's own: no node is needed to say it (concurrency 0: not planned).
    unplanned = ResourcePlan(
        worker=sweep.worker_resources,
        workers=sweep.min_workers,
        max_workers=sweep.max_workers,
        concurrency=0,
        cluster={},
        nodes=0,
        total_trials=trials,
    )
    return unplanned.describe_group()


def _cmd_sweep(args: argparse.Namespace) -> int:
    from sweeplab.engine import apply_options, plan_warm_start, run_sweep

    sweep, options = _planned_sweep(
        args,
        storage=args.storage,
        resume=args.resume,
        live=not args.no_live,
        stall_timeout_s=args.stall_timeout,
        fail_on_stall=args.fail_on_stall,
    )
    if options.address is not None:
        from sweeplab.engine import check_address

        check_address(options.address)  # before the warm start reads the tracking store
    console = _console()
    warm_start = None
    if not args.resume:  # planned before anything starts: an unknown sweep is exit 2
        warm_start = plan_warm_start(apply_options(sweep, options), args.tracking_uri)
    if warm_start is not None:
        for line in warm_start.lines():
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    try:
        outcome = run_sweep(sweep, options, warm_start=warm_start)
    except SweeplabError:
        raise
    except Exception as exc:
        console.print(f"[red]sweep failed[/red]: {type(exc).__name__}: {exc}")
        return EXIT_FAILED
    _print_outcome(console, outcome)
    if outcome.trials and outcome.errored == outcome.trials:
        console.print(
            f"[red]sweep failed[/red]: all {outcome.trials} trials errored; see "
            f"{outcome.storage_dir / 'ray.log'} and the trials' error files."
        )
        return EXIT_FAILED
    return EXIT_OK


def _print_outcome(console: Any, outcome: Any) -> None:
    from rich.table import Table

    resolved = outcome.resolved
    console.print(
        f"[bold]{resolved.name}[/bold]: {outcome.trials} trials in {outcome.wall_s:.1f}s "
        f"({outcome.errored} errored); storage {outcome.storage_dir}"
    )
    console.print(_diverged_line(outcome.diverged, outcome.trials, outcome.resolved.metric))
    summary = outcome.summary
    if outcome.best and "front" in outcome.best:
        _print_front_outcome(console, outcome)
    elif summary is not None and getattr(summary, "trials", None):
        table = Table(
            title=f"top trials by {resolved.rank_by} {resolved.metric} ({resolved.mode})",
            box=None,
            header_style="bold",
        )
        for column in ("rank", "trial", "status", resolved.metric, "iterations", "config"):
            table.add_column(column)
        for rank, trial in enumerate(summary.trials[:5], start=1):
            value = trial.best_value if resolved.rank_by == "best" else trial.last_value
            table.add_row(
                str(rank),
                trial.trial_id,
                trial.status,
                "-" if value is None else f"{value:.4g}",
                str(trial.iterations),
                _compact(trial.config),
            )
        console.print(table)
    if outcome.best and "front" not in outcome.best:
        console.print(f"[bold]best config[/bold] ({outcome.best.get('trial_id')}):")
        console.print_json(json.dumps(outcome.best.get("config"), default=str))
        console.print(f"written to {outcome.storage_dir / 'best_config.json'}")
    console.print(f"Ray's logs: {outcome.storage_dir / 'ray.log'}")
    for warning in outcome.warnings:
        console.print(f"[yellow]warning[/yellow]: {warning}")


def _print_front_outcome(console: Any, outcome: Any) -> None:
    """A multi-objective sweep's top trials by Pareto front, its front and the picked trial."""
    from rich.table import Table

    from sweeplab.keys import FRONT_INFEASIBLE

    best, summary = outcome.best, outcome.summary
    objectives = best["objectives"]
    if summary is not None and summary.trials:
        table = Table(title="top trials by Pareto front", box=None, header_style="bold")
        for column in ("rank", "trial", "status", "front", *_objective_columns(objectives)):
            table.add_column(column)
        table.add_column("iterations")
        table.add_column("config")
        for trial in summary.trials[:5]:
            front = trial.front if trial.front is not None else "-"
            if trial.front is None and trial.has_point and trial.violation > 0:
                front = FRONT_INFEASIBLE
            table.add_row(
                str(trial.rank),
                trial.trial_id,
                trial.status,
                str(front),
                *(_fmt(o["name"], trial.values) for o in objectives),
                str(trial.iterations),
                _compact(trial.config),
            )
        console.print(table)
    _print_pick(console, best, best.get("pick"), _picked_row(best))
    if best.get("trial_id") is not None:
        console.print_json(json.dumps(best.get("config"), default=str))
    console.print(f"front and pick written to {outcome.storage_dir / 'best_config.json'}")


def _objective_columns(objectives: list[dict[str, str]]) -> list[str]:
    return [f"{o['name']} ({o['mode']})" for o in objectives]


def _fmt(name: str, values: dict[str, float] | None) -> str:
    value = (values or {}).get(name)
    return "-" if value is None else f"{value:.4g}"


def _picked_row(best: dict[str, Any]) -> dict[str, Any] | None:
    """The front row of the trial a best_config document picked (None when none was)."""
    return next((row for row in best["front"] if row["trial_id"] == best.get("trial_id")), None)


def _print_pick(
    console: Any, best: dict[str, Any], rule: str | None, picked: dict[str, Any] | None
) -> None:
    """The front's size, objectives, constraints and hypervolume; then the picked trial."""
    objectives = best["objectives"]
    parts = [
        f"front: {len(best['front'])} trial(s)",
        "objectives " + ", ".join(_objective_columns(objectives)),
    ]
    if best.get("constraints"):
        parts.append("constraints " + ", ".join(best["constraints"]))
    volume, reference = best.get("hypervolume"), best.get("reference_point")
    if volume is not None and reference is not None:
        point = ", ".join(
            f"{o['name']}={v:.4g}" for o, v in zip(objectives, reference, strict=True)
        )
        parts.append(f"hypervolume {volume:.4g} (reference point {point})")
    else:
        parts.append("hypervolume - (no trial reported every objective)")
    console.print(" · ".join(parts), markup=False, highlight=False, soft_wrap=True)
    how = f"by {rule!r}" if rule else "the first of the ranking"
    if picked is None:
        why = (
            f"no front trial keeps {rule!r}"
            if best["front"]
            else "the front is empty: no trial reported every objective within the constraints"
        )
        console.print(f"picked ({how}): none; {why}", markup=False, highlight=False, soft_wrap=True)
        return
    shown = ", ".join(f"{o['name']} = {_fmt(o['name'], picked['values'])}" for o in objectives)
    line = f"picked ({how}): trial {picked['trial_id']} · {shown}"
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def _diverged_line(diverged: int, trials: int, metric: str) -> str:
    """How many trials diverged: their metric was NaN or infinite, so they were cut there."""
    if not diverged:
        return f"diverged: 0 of {trials} trials"
    return (
        f"[magenta]diverged[/magenta]: {diverged} of {trials} trials ({metric} NaN or "
        "infinite); each was stopped at its first such report and ranks last"
    )


def _compact(config: dict[str, Any]) -> str:
    """`lr=0.0229 optimizer.name=adam`: a config on one short line."""
    from sweeplab.space import flatten_config

    parts = []
    for key, value in flatten_config(config).items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        parts.append(f"{key}={text}")
    return " ".join(parts)


def _cmd_ls(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sweeplab.tracking import list_sweeps

    frame = list_sweeps(args.tracking_uri)
    if args.json:
        print(json.dumps([_sweep_row(row) for row in frame.to_dict("records")], indent=2))
        return EXIT_OK
    console = _console()
    if frame.empty:
        console.print("no sweeps in the tracking store")
        return EXIT_OK
    table = Table(box=None, header_style="bold")
    for column in ("sweep", "status", "trials", "best_metric", "metric", "started"):
        table.add_column(column)
    for row in frame.itertuples():
        best = (
            "-"
            if row.best_metric is None or row.best_metric != row.best_metric
            else (f"{row.best_metric:.4g}")
        )
        table.add_row(
            str(row.sweep),
            str(row.status),
            str(row.trials),
            best,
            str(row.metric),
            str(row.started)[:19],
        )
    console.print(table)
    return EXIT_OK


def _sweep_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row of `list_sweeps` as JSON: a missing best is null, the start an ISO time (UTC)."""
    best = row["best_metric"]
    return {
        "sweep": row["sweep"],
        "status": row["status"],
        "trials": int(row["trials"]),
        "best_metric": None if best is None or best != best else float(best),
        "metric": row["metric"],
        "started": row["started"].tz_localize("UTC").isoformat(),
        "parent_run_id": row["parent_run_id"],
    }


def _cmd_best(args: argparse.Namespace) -> int:
    from sweeplab.tracking import best_trial

    best = best_trial(args.sweep, args.tracking_uri)
    if "front" in best:
        return _best_front(args, best)
    if args.pick is not None:
        raise SpecError(
            f"--pick {args.pick!r}: sweep {args.sweep!r} ranks one metric "
            f"({best.get('metric')!r}); a pick rule picks from a multi-objective sweep's front."
        )
    if args.json:
        print(json.dumps(best, indent=2, default=str))
        return EXIT_OK
    console = _console()
    console.print(
        f"[bold]{args.sweep}[/bold]: best trial {best.get('trial_id')} · {best.get('metric')} = "
        f"{best.get('value')} ({best.get('mode')}, by {best.get('rank_by')} value)"
    )
    console.print_json(json.dumps(best.get("config"), default=str))
    console.print(f"checkpoint: {best.get('checkpoint')}")
    console.print(f"MLflow run: {best.get('mlflow_run_id')}")
    _print_diverged(console, args, best)
    return EXIT_OK


def _print_diverged(console: Any, args: argparse.Namespace, best: dict[str, Any]) -> None:
    """The diverged trials, from the best document (a sweep recorded before it listed them:
    from every ranked trial)."""
    diverged, trials = best.get("diverged"), best.get("trials")
    if not isinstance(diverged, list) or not isinstance(trials, int):
        from sweeplab.tracking import ranked_configs

        ranked = ranked_configs(args.sweep, args.tracking_uri).trials
        diverged = [trial.trial_id for trial in ranked if trial.status == "diverged"]
        trials = len(ranked)
    if diverged:
        console.print(
            _diverged_line(len(diverged), trials, str(best.get("metric")))
            + f": {', '.join(map(str, diverged))}"
        )


def _best_front(args: argparse.Namespace, best: dict[str, Any]) -> int:
    """`sweeplab best` of a multi-objective sweep: its front, and the trial a rule picks."""
    from rich.table import Table

    front = best["front"]
    rule, picked = best.get("pick"), _picked_row(best)
    if args.pick is not None:
        rule, picked = args.pick, _repick(best, args.pick)
        if args.json:
            print(json.dumps(picked, indent=2, default=str))
            return EXIT_OK
    if args.json:
        print(json.dumps(front, indent=2, default=str))
        return EXIT_OK
    console = _console()
    objectives = best["objectives"]
    table = Table(title=f"{args.sweep}: Pareto front", box=None, header_style="bold")
    for column in ("rank", "trial", *_objective_columns(objectives), "config"):
        table.add_column(column)
    for row in front:
        cells = (_fmt(o["name"], row["values"]) for o in objectives)
        table.add_row(str(row["rank"]), row["trial_id"], *cells, _compact(row["config"] or {}))
    console.print(table)
    _print_pick(console, best, rule, picked)
    if picked is not None:
        console.print_json(json.dumps(picked["config"], default=str))
        console.print(f"checkpoint: {picked['checkpoint']}")
        console.print(f"MLflow run: {picked['mlflow_run_id']}")
    _print_diverged(console, args, best)
    return EXIT_OK


def _repick(best: dict[str, Any], rule: str) -> dict[str, Any] | None:
    """The front row that `rule` picks from a best_config document's front.

    Raises:
        SpecError: The rule does not parse for the sweep's objectives.
    """
    from sweeplab.pareto import Objective
    from sweeplab.tracking import TrialRecord, pick_trial

    objectives = [Objective(o["name"], o["mode"]) for o in best["objectives"]]
    front = [
        TrialRecord(trial_id=row["trial_id"], rank=row["rank"], values=row["values"], front=1)
        for row in best["front"]
    ]
    try:
        chosen = pick_trial(front, rule, objectives)
    except ValueError as exc:
        raise SpecError(f"--pick {exc}, but got {rule!r}.") from None
    return None if chosen is None else best["front"][front.index(chosen)]


def _cmd_report(args: argparse.Namespace) -> int:
    from sweeplab.report import write_report

    path = write_report(args.sweep, args.out, tracking_uri=args.tracking_uri)
    print(f"report written to {path}")
    return EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    import math

    from sweeplab.report import compare_sweeps, write_comparison

    comparison = compare_sweeps(
        args.sweeps, metric=args.metric, mode=args.mode, tracking_uri=args.tracking_uri
    )
    for label, row in comparison.summary.iterrows():
        best, reports = row["final best"], row["reports"]
        reached = f"{best:.6g} at report {row['reached at report']} of {reports}"
        if math.isnan(best):
            reached = f"no finite value in {reports} reports"
        print(f"{label}: best {comparison.metric} ({comparison.mode}) {reached}")
    path = write_comparison(comparison, args.out)
    print(f"comparison written to {path}")
    return EXIT_OK


def _cmd_status(args: argparse.Namespace) -> int:
    from sweeplab.engine.status import print_status

    if args.json:
        return _status_json(args)
    return print_status(spec=args.spec, address=args.address)


def _status_json(args: argparse.Namespace) -> int:
    """`sweeplab status --json`: what the tables say, as one JSON object."""
    import dataclasses

    from sweeplab.engine import local_nodes, plan_resources
    from sweeplab.engine.status import cluster_status
    from sweeplab.errors import ResourceError
    from sweeplab.spec import load_spec

    sweep = load_spec(args.spec) if args.spec is not None else None  # fails before connecting
    if args.address is None:  # nothing starts: the node a local Ray would start with
        nodes: list[dict[str, Any]] = [
            {"node_id": "(local)", "address": "this machine", "total": node, "free": None}
            for node in local_nodes()
        ]
    else:
        nodes = [dataclasses.asdict(node) for node in cluster_status(args.address)]
    out: dict[str, Any] = {"address": args.address, "nodes": nodes}
    if sweep is not None:
        try:
            plan = plan_resources(sweep, [dict(node["total"]) for node in nodes])
        except ResourceError as exc:
            raise ResourceError(f"{args.spec}: {exc}") from None
        out["sweep"] = {
            "name": sweep.name,
            "workers": plan.workers,
            "max_workers": plan.max_workers,
            "worker": dict(plan.worker),
            "placement": sweep.placement_strategy,
            "concurrency": plan.concurrency,
            "total_trials": plan.total_trials,
        }
    print(json.dumps(out, indent=2))
    return EXIT_OK


def _cmd_ui(args: argparse.Namespace) -> int:
    import os

    from sweeplab.report import (
        DEFAULT_URI,
        mlflow_ui_command,
        runs_url,
        serve,
        sweep_experiments,
    )
    from sweeplab.tracking import check_sweep_store

    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    server = uri.startswith(("http://", "https://"))
    if not server:  # MLflow's server would create a store that is not there: exit 2 instead
        check_sweep_store(uri, args.sweep)
    # An unknown sweep: exit 2, nothing started. A server is asked only about the sweep named.
    pages = sweep_experiments(uri, args.sweep) if args.sweep or not server else []
    if server:
        print(f"The tracking store is a server already: open {uri}")
        for name, experiment_id in pages:
            print(f"  sweep {name}: {runs_url(uri, experiment_id)}")
        return EXIT_OK
    address = f"http://127.0.0.1:{args.port}"
    print(f"MLflow UI on {uri}: {address} (Ctrl-C to stop)")
    for name, experiment_id in pages:
        print(f"  sweep {name}: {runs_url(address, experiment_id)}")
    sys.stdout.flush()
    return serve(mlflow_ui_command(uri, args.port))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
