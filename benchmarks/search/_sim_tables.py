"""The simulated search benchmark's printed tables: one per problem, and the issue's checks."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.search._sim_strategies import BEST_GRACE

__all__ = ["print_tables"]


def _fraction(summary: dict[str, Any]) -> str:
    median = summary["median"]
    if isinstance(median, float) and math.isnan(median):
        return "-"
    text = "never" if math.isinf(median) else f"{median:.2f}"
    return f"{text} ({summary['reached']}/{summary['seeds']})"


def _share(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return "never" if math.isinf(value) else f"{value:.2f}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def print_tables(report: dict[str, Any]) -> None:
    """Prints, with rich, a table per problem (a row per strategy: medians over seeds), the
    strategies' mean ranks, the checks of the candidate, and the time of the full benchmark by
    extrapolation."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width))
    candidate = report["checks"]["candidate"]
    for name, result in report["problems"].items():
        table = Table(
            title=f"{result['title']} ({name}): budget {result['budget']} iterations, "
            f"{len(report['config']['seeds'])} seeds, {result['mode']} {result['score']}",
            title_justify="left",
        )
        table.add_column("strategy")
        table.add_column("to random+fifo's final (median, reached)", justify="right")
        table.add_column("to random+asha's median final", justify="right")
        table.add_column("median final", justify="right")
        table.add_column(f"median regret ({result['regret_reference']})", justify="right")
        table.add_column("trials", justify="right")
        table.add_column("s/run", justify="right")
        for strategy, summary in result["summary"].items():
            if strategy.startswith("random+asha-g"):
                continue  # shown through the best-grace row; every grace is in the JSON
            label = strategy
            if strategy == BEST_GRACE:
                label += f" (grace {summary['grace']})"
            if strategy == candidate:
                label = f"[bold]{label}[/bold] (candidate)"
            if summary["seeds"] < len(report["config"]["seeds"]):
                label += f" ({summary['seeds']} seeds)"
            if summary["errors"]:
                label += f" [red]{summary['errors']} errors[/red]"
            table.add_row(
                label,
                _fraction(summary["to_fifo_target"]),
                _fraction(summary["to_asha_median_final"]),
                _number(summary["final_best_median"]),
                _number(summary["regret_median"]),
                _number(summary["trials_median"]),
                _number(summary["run_s_mean"]),
            )
        console.print(table)
    _print_ranks(console, report, candidate)
    _print_field(console, report["field"])
    _print_default_checks(console, report["default_checks"])
    full = report["timing"]["full_run"]
    console.print(
        f"this run: {report['timing']['wall_s']:.1f} s; the full benchmark ({full['what']}) "
        f"extrapolates to {full['wall_s_estimate']:.0f} s (goal {full['goal_s']:.0f} s)"
        + (f"; not measured: {', '.join(full['not_measured'])}" if full["not_measured"] else "")
    )


def _print_ranks(console: Any, report: dict[str, Any], candidate: str) -> None:
    from rich.table import Table

    ranks = report["ranks"]
    table = Table(
        title=f"the field: {ranks['rule']}, over {len(report['problems'])} problems",
        title_justify="left",
    )
    table.add_column("strategy")
    table.add_column("seeds", justify="right")
    table.add_column("mean rank", justify="right")
    table.add_column("LCBench", justify="right")
    table.add_column("synthetic", justify="right")
    table.add_column("best on")
    for strategy, row in ranks["by_strategy"].items():
        label = f"[bold]{strategy}[/bold] (candidate)" if strategy == candidate else strategy
        table.add_row(
            label,
            str(row["seeds"]),
            _rank(row["mean_rank"]),
            _rank(row["mean_rank_lcbench"]),
            _rank(row["mean_rank_synthetic"]),
            ", ".join(row["first"]) or "-",
        )
    console.print(table)


def _print_default_checks(console: Any, found: dict[str, Any]) -> None:
    from rich.table import Table

    def span(values: list[float] | None, unit: str = "") -> str:
        if not values:
            return "-"
        return f"{_share(values[0])}{unit}-{_share(values[1])}{unit}"

    def failing(check: dict[str, Any]) -> str:
        return f"; failing: {', '.join(check['failing'])}" if check["failing"] else ""

    quick, adaptive = found["quick_to_fifo"], found["against_adaptive_asha"]
    first, regret = found["first_in_rank"], found["regret"]
    rows = [
        (quick["rule"], f"{span(quick['range'])} on {quick['tasks']} tasks{failing(quick)}"),
        (
            adaptive["rule"],
            f"{span(adaptive['range'], 'x')} on {adaptive['tasks']} tasks{failing(adaptive)}",
        ),
        (
            first["rule"],
            f"{_number(first['candidate'])}, next best {_number(first['next_best'])}, "
            f"of {first['strategies']}",
        ),
        (
            regret["rule"],
            "; ".join(
                f"{name}: {row['lower']} lower / {row['higher']} higher of {row['pairs']}, "
                f"p = {_number(row['p'])}"
                + (" (fewer seeds: not decided)" if name in regret["undecided"] else "")
                for name, row in regret["against"].items()
            )
            or "-",
        ),
    ]
    checks = [quick, adaptive, first, regret]
    table = Table(
        title=f"the checks of {found['candidate']}, the default (issue 42)", title_justify="left"
    )
    table.add_column("check")
    table.add_column("figure")
    table.add_column("passed")
    for (rule, figure), check in zip(rows, checks, strict=True):
        passed = check["passed"]
        table.add_row(rule, figure, {True: "yes", False: "[red]no[/red]", None: "-"}[passed])
    console.print(table)


def _print_field(console: Any, field: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=field["rule"], title_justify="left")
    table.add_column("against")
    table.add_column("pairs", justify="right")
    table.add_column("lower", justify="right")
    table.add_column("higher", justify="right")
    table.add_column("p", justify="right")
    for other, found in field["by_strategy"].items():
        table.add_row(
            other,
            str(found["pairs"]),
            str(found["lower"]),
            str(found["higher"]),
            "-" if found["p"] is None else f"{found['p']:.2g}",
        )
    console.print(table)


def _rank(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
