"""`sweeplab preview` and `sweeplab sweep`: the plan a spec runs, then the run and its outcome."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sweeplab.cli._output import (
    EXIT_FAILED,
    EXIT_OK,
    compact,
    diverged_line,
    fmt,
    new_console,
    objective_columns,
    picked_row,
    print_pick,
)
from sweeplab.errors import SpecError, SweeplabError

__all__ = ["cmd_preview", "cmd_sweep"]


def _planned_sweep(args: argparse.Namespace, **run: Any) -> tuple[Any, Any]:
    """The spec with `--pick` applied, and the options of the plan flags plus `run`'s.

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


def cmd_preview(args: argparse.Namespace) -> int:
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
    console = new_console()
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
        waiting_holds_nothing=True,  # the loop starts a trial's group only when it runs
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


def cmd_sweep(args: argparse.Namespace) -> int:
    from sweeplab.engine import apply_options, plan_warm_start, run_sweep

    sweep, options = _planned_sweep(
        args,
        storage=args.storage,
        resume=args.resume,
        live=not args.no_live,
        stall_timeout_s=args.stall_timeout,
        fail_on_stall=args.fail_on_stall,
    )
    from sweeplab.engine import check_runnable

    check_runnable(apply_options(sweep, options), options)  # a refusal before anything starts
    if options.address is not None:
        from sweeplab.engine import check_address

        check_address(options.address)  # before the warm start reads the tracking store
    console = new_console()
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
    console.print(diverged_line(outcome.diverged, outcome.trials, outcome.resolved.metric))
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
                compact(trial.config),
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
        for column in ("rank", "trial", "status", "front", *objective_columns(objectives)):
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
                *(fmt(o["name"], trial.values) for o in objectives),
                str(trial.iterations),
                compact(trial.config),
            )
        console.print(table)
    print_pick(console, best, best.get("pick"), picked_row(best))
    if best.get("trial_id") is not None:
        console.print_json(json.dumps(best.get("config"), default=str))
    console.print(f"front and pick written to {outcome.storage_dir / 'best_config.json'}")
