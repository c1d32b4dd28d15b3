"""The commands that read what sweeps recorded (`ls`, `best`, `report`, `compare`, `ui`) or the
cluster they run on (`status`); none writes to the tracking store."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sweeplab.cli._output import (
    EXIT_OK,
    compact,
    diverged_line,
    fmt,
    new_console,
    objective_columns,
    picked_row,
    print_pick,
)
from sweeplab.errors import SpecError

__all__ = ["cmd_best", "cmd_compare", "cmd_ls", "cmd_report", "cmd_status", "cmd_ui"]


def cmd_ls(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sweeplab.tracking import list_sweeps

    frame = list_sweeps(args.tracking_uri)
    if args.json:
        print(json.dumps([_sweep_row(row) for row in frame.to_dict("records")], indent=2))
        return EXIT_OK
    console = new_console()
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


def cmd_best(args: argparse.Namespace) -> int:
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
    console = new_console()
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
            diverged_line(len(diverged), trials, str(best.get("metric")))
            + f": {', '.join(map(str, diverged))}"
        )


def _best_front(args: argparse.Namespace, best: dict[str, Any]) -> int:
    """`sweeplab best` of a multi-objective sweep: its front, and the trial a rule picks."""
    from rich.table import Table

    front = best["front"]
    rule, picked = best.get("pick"), picked_row(best)
    if args.pick is not None:
        rule, picked = args.pick, _repick(best, args.pick)
        if args.json:
            print(json.dumps(picked, indent=2, default=str))
            return EXIT_OK
    if args.json:
        print(json.dumps(front, indent=2, default=str))
        return EXIT_OK
    console = new_console()
    objectives = best["objectives"]
    table = Table(title=f"{args.sweep}: Pareto front", box=None, header_style="bold")
    for column in ("rank", "trial", *objective_columns(objectives), "config"):
        table.add_column(column)
    for row in front:
        cells = (fmt(o["name"], row["values"]) for o in objectives)
        table.add_row(str(row["rank"]), row["trial_id"], *cells, compact(row["config"] or {}))
    console.print(table)
    print_pick(console, best, rule, picked)
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


def cmd_report(args: argparse.Namespace) -> int:
    from sweeplab.report import write_report

    path = write_report(args.sweep, args.out, tracking_uri=args.tracking_uri)
    print(f"report written to {path}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
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


def cmd_status(args: argparse.Namespace) -> int:
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


def cmd_ui(args: argparse.Namespace) -> int:
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
