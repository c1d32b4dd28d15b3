"""The command line's grammar: `sweeplab`'s commands, their arguments and flags."""

from __future__ import annotations

import argparse
from pathlib import Path

from sweeplab.engine import DEFAULT_STORAGE

__all__ = ["build_parser"]


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


def build_parser() -> argparse.ArgumentParser:
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
        help=f"folder for checkpoints, the sweep's state and logs (default: ./{DEFAULT_STORAGE})",
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
