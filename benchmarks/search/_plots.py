"""The benchmark's figures (matplotlib, PNG): anytime curves, headline fractions, variants, warm."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.search._curves import best_at, percentile
from benchmarks.search._strategies import STRATEGIES, VARIANTS

__all__ = ["plot_all"]

_COLORS = {
    "random+fifo": "black",
    "random+asha": "tab:gray",
    "optuna+asha": "tab:blue",
    "hyperopt+asha": "tab:orange",
    "optuna+hyperband": "tab:green",
    "random+pbt": "tab:purple",
}
_NEVER = 1.1  # where a never-reached fraction is drawn


def _band(runs: Sequence[dict[str, Any]], xs: Any, axis: int) -> Any:
    """Median and quartiles over runs of the anytime curve at each x.

    NaN until every run has reported (so the median is over the same runs throughout); a run
    that has ended holds its final value. Against time (``axis=1``) each run's clock starts at
    its first report (Ray's and Tune's start-up, the same for every strategy, left out), and
    the band stops at the median time the runs spent their budget.
    """
    import numpy as np

    starts = [run["steps"][0][1] if axis == 1 else 0.0 for run in runs]
    values = np.array(
        [
            [best_at(run["steps"], x + t0, axis) for x in xs]
            for run, t0 in zip(runs, starts, strict=True)
        ],
        dtype=float,
    )
    out: list[tuple[float, ...]] = []
    for column in values.T:
        if any(math.isnan(v) for v in column):
            out.append((math.nan, math.nan, math.nan))
        else:
            out.append(tuple(percentile(list(column), q) for q in (0.5, 0.25, 0.75)))
    band = np.array(out).T
    if axis == 1:
        ends = [run["seconds_at_budget"] - t0 for run, t0 in zip(runs, starts, strict=True)]
        if ends:
            band[:, np.asarray(xs) > percentile(ends, 0.5)] = math.nan
    return band


def _valid(runs: dict[str, Any]) -> list[dict[str, Any]]:
    return [run for run in runs.values() if run.get("steps")]


def _plot_problem(name: str, result: dict[str, Any], path: Path) -> Path:
    import matplotlib.pyplot as plt
    import numpy as np

    budget = result["budget"]
    fig, (by_budget, by_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    xs = np.arange(1, budget + 1)
    last_second = max(
        (
            run.get("seconds_at_budget") or 0.0
            for runs in result["runs"].values()
            for run in runs.values()
        ),
        default=1.0,
    )
    ts = np.concatenate([[0.0], np.geomspace(0.1, max(last_second, 1.0), 400)])
    for strategy in STRATEGIES:
        runs = _valid(result["runs"].get(strategy, {}))
        if not runs:
            continue
        color = _COLORS.get(strategy)
        median, low, high = _band(runs, xs, 0)
        by_budget.plot(xs / budget, median, color=color, label=strategy)
        by_budget.fill_between(xs / budget, low, high, color=color, alpha=0.12)
        median, low, high = _band(runs, ts, 1)
        by_time.plot(ts, median, color=color, label=strategy)
        by_time.fill_between(ts, low, high, color=color, alpha=0.12)
    targets = list(result.get("targets", {}).values())
    for axis in (by_budget, by_time):
        if targets:
            axis.axhline(
                percentile(targets, 0.5), color="black", ls="--", lw=0.8, label="target (median)"
            )
        if result.get("optimum") is not None:
            axis.axhline(result["optimum"], color="red", ls=":", lw=0.8, label="optimum")
        axis.set_ylabel("best score so far (lower is better)")
        axis.grid(alpha=0.3)
    _zoom(by_budget, result)
    _zoom(by_time, result)
    by_budget.axvline(1 / 3, color="tab:blue", ls=":", lw=0.8)
    by_budget.set_xlabel("budget consumed (fraction of random + FIFO's N x R iterations)")
    by_time.set_xscale("symlog", linthresh=1.0)
    by_time.set_xlim(left=0.0)
    by_time.set_xlabel("wall time since the sweep's first report (s, log scale; loaded machine)")
    by_budget.legend(fontsize=8)
    fig.suptitle(f"{result['title']}: median over seeds, band = interquartile range", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _zoom(axis: Any, result: dict[str, Any]) -> None:
    """Shows the part around the target: from the best reached to well above the target."""
    finals = [
        run["final_best"]
        for runs in result["runs"].values()
        for run in runs.values()
        if run.get("final_best") is not None
    ]
    targets = list(result.get("targets", {}).values())
    if not finals or not targets:
        return
    firsts = [run["steps"][0][2] for runs in result["runs"].values() for run in _valid(runs)]
    low = min(finals + ([result["optimum"]] if result.get("optimum") is not None else []))
    target = percentile(targets, 0.5)
    if target > low:
        high = min(target + 2.5 * (target - low), max(firsts, default=math.inf))
        axis.set_ylim(low - 0.1 * (target - low), max(high, target) + 0.1 * (target - low))


def _fraction_points(runs: dict[str, Any]) -> list[float]:
    return [
        _NEVER if run.get("fraction") is None else run["fraction"]
        for run in runs.values()
        if "steps" in run
    ]


def _plot_headline(report: dict[str, Any], path: Path) -> Path:
    import matplotlib.pyplot as plt

    problems = list(report["problems"])
    fig, axes = plt.subplots(1, len(problems), figsize=(4.2 * len(problems), 4.2), squeeze=False)
    for axis, name in zip(axes[0], problems, strict=True):
        result = report["problems"][name]
        strategies = [s for s in STRATEGIES if s in result["runs"]]
        for index, strategy in enumerate(strategies):
            points = _fraction_points(result["runs"][strategy])
            color = _COLORS.get(strategy)
            axis.scatter([index] * len(points), points, color=color, alpha=0.6, s=18)
            median = result["summary"][strategy]["median"]
            shown = _NEVER if median is None or math.isinf(median) else median
            axis.hlines(shown, index - 0.3, index + 0.3, color=color, lw=2.5)
        axis.axhline(1 / 3, color="tab:blue", ls=":", lw=0.8)
        axis.axhline(_NEVER, color="red", lw=0.5)
        axis.text(-0.4, _NEVER + 0.02, "never reached", color="red", fontsize=7)
        axis.set_xticks(range(len(strategies)), strategies, rotation=40, ha="right", fontsize=8)
        axis.set_ylim(0, _NEVER + 0.1)
        axis.set_title(result["title"], fontsize=9)
        axis.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel("budget to reach the target (fraction of N x R)")
    fig.suptitle(
        "budget to reach random + FIFO's final best, per seed (dots) and median (bar); "
        "dotted: the 1/3 goal",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _plot_variants(report: dict[str, Any], path: Path) -> Path | None:
    import matplotlib.pyplot as plt

    problems = [n for n, r in report["problems"].items() if set(VARIANTS) & set(r["runs"])]
    if not problems:
        return None
    fig, axes = plt.subplots(1, len(problems), figsize=(4.2 * len(problems), 4.2), squeeze=False)
    for axis, name in zip(axes[0], problems, strict=True):
        result = report["problems"][name]
        names = [n for n in ["optuna+asha", *VARIANTS] if n in result["runs"]]
        for index, strategy in enumerate(names):
            points = _fraction_points(result["runs"][strategy])
            axis.scatter([index] * len(points), points, color="tab:blue", alpha=0.5, s=18)
            median = result["summary"][strategy]["median"]
            shown = _NEVER if median is None or math.isinf(median) else median
            axis.hlines(shown, index - 0.3, index + 0.3, color="tab:blue", lw=2.5)
        labels = [n.removesuffix("+asha") for n in names]
        axis.set_xticks(range(len(names)), labels, rotation=30, ha="right", fontsize=8)
        axis.axhline(1 / 3, color="tab:blue", ls=":", lw=0.8)
        axis.axhline(_NEVER, color="red", lw=0.5)
        axis.set_ylim(0, _NEVER + 0.1)
        axis.set_title(result["title"], fontsize=9)
        axis.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel("budget to reach the target (fraction of N x R)")
    fig.suptitle(
        "Optuna + ASHA: the default (TPE, rung rule, scaled start-up) and the other levers;"
        " top line: never",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _plot_warm(report: dict[str, Any], path: Path) -> Path | None:
    import matplotlib.pyplot as plt
    import numpy as np

    problems = [n for n, r in report["problems"].items() if r.get("warm", {}).get("runs")]
    if not problems:
        return None
    fig, axes = plt.subplots(1, len(problems), figsize=(4.2 * len(problems), 4.0), squeeze=False)
    for axis, name in zip(axes[0], problems, strict=True):
        result = report["problems"][name]
        budget = result["budget"]
        xs = np.arange(1, budget + 1)
        for label, runs, color in [
            ("cold (optuna+asha)", result["runs"].get("optuna+asha", {}), "tab:blue"),
            ("warm-started", result["warm"]["runs"], "tab:red"),
        ]:
            valid = _valid(runs)
            if not valid:
                continue
            median, low, high = _band(valid, xs, 0)
            axis.plot(xs / budget, median, color=color, label=label)
            axis.fill_between(xs / budget, low, high, color=color, alpha=0.15)
        targets = list(result.get("targets", {}).values())
        if targets:
            axis.axhline(percentile(targets, 0.5), color="black", ls="--", lw=0.8, label="target")
        _zoom(axis, result)
        axis.set_title(result["title"], fontsize=9)
        axis.set_xlabel("budget consumed (fraction of N x R)")
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("best score so far")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(
        "optuna+asha warm-started from an earlier sweep (another seed) vs cold: median, IQR",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_all(report: dict[str, Any], folder: Path) -> list[Path]:
    """Writes every figure into ``folder`` as ``search-*.png``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    folder.mkdir(parents=True, exist_ok=True)
    paths = [
        _plot_problem(name, result, folder / f"search-{name}.png")
        for name, result in report["problems"].items()
        if result["runs"]
    ]
    if report["problems"]:
        paths.append(_plot_headline(report, folder / "search-headline.png"))
    for extra in (
        _plot_variants(report, folder / "search-optuna-variants.png"),
        _plot_warm(report, folder / "search-warm.png"),
    ):
        if extra is not None:
            paths.append(extra)
    return paths
