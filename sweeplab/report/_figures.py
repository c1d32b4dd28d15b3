"""The report's figures: learning curves, parallel coordinates and parameter importance."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sweeplab.report._table import objective, param_frame

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from sweeplab.tracking import SweepData


_LABEL_BOX = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8}


def _figure(width: float, height: float) -> tuple[Figure, Any]:
    # A bare Figure (not pyplot) needs no GUI backend and is never kept alive by pyplot's
    # registry; Jupyter still shows it inline as the cell's value.
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def _empty(axes: Any, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes)
    axes.set_axis_off()


def learning_curves(data: SweepData) -> Figure:
    """The sweep's metric per step, one line per trial, coloured by rank.

    Rank 1 (the best trial) is the darkest and drawn on top; a colorbar maps colour to rank,
    and the legend names the best trial. Unranked trials are grey and dashed.
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.ticker import MaxNLocator

    figure, axes = _figure(9, 4.5)
    history = data.history
    curves = history[history["metric"] == data.metric] if not history.empty else history
    if curves.empty:
        _empty(axes, f"no {data.metric or 'metric'} points recorded")
        return figure
    ranks = data.trials.set_index("trial_id")["rank"]
    worst = int(ranks.max()) if ranks.notna().any() else 1
    cmap = colormaps["viridis"]
    # Rank 1 -> the dark end of viridis; the worst rank -> a light yellow-green.
    norm = Normalize(vmin=1, vmax=max(worst, 2))

    def shade(rank: Any) -> Any:
        return cmap(0.85 * (norm(rank)))

    def worst_first(trial_id: str) -> float:
        rank = ranks.get(trial_id)
        return -math.inf if rank is None or rank != rank else -float(rank)

    order = sorted(curves["trial_id"].unique(), key=worst_first)
    for trial_id in order:
        points = curves[curves["trial_id"] == trial_id].sort_values("step")
        rank = ranks.get(trial_id)
        if rank is None or rank != rank:
            axes.plot(points["step"], points["value"], color="0.6", ls="--", lw=1)
            continue
        best = int(rank) == 1
        axes.plot(
            points["step"],
            points["value"],
            color=shade(int(rank)),
            lw=2.6 if best else 1.4,
            marker="o",
            ms=4 if best else 2.5,
            zorder=3 if best else 2,
            label=f"best: {trial_id}" if best else None,
        )
    axes.set_xlabel("step (training iteration)")
    axes.set_ylabel(data.metric)
    axes.set_title(f"{data.metric} per step ({data.mode}), coloured by rank")
    axes.grid(alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="best", fontsize="small")
    mappable = ScalarMappable(norm=norm, cmap=cmap.resampled(256))
    mappable.set_array([])
    bar = figure.colorbar(mappable, ax=axes, label="rank (1 = best)")
    # The colour scale's lightest 15 % is unused: show the bar over the used part only.
    bar.ax.set_ylim(1, 1 + 0.85 * (max(worst, 2) - 1))
    bar.ax.invert_yaxis()
    bar.ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return figure


def _axis_values(column: pd.Series) -> tuple[list[float], list[float], list[str], bool]:
    """A param column on a 0..1 axis: positions (NaN if missing), tick positions and labels,
    and whether the axis is logarithmic."""
    import numpy as np

    present = column.dropna()
    kind = str(column.dtype)
    numeric = kind == "Int64" or kind.startswith("float")
    if not numeric:
        categories = sorted(set(present), key=str)
        span = max(len(categories) - 1, 1)
        codes = {c: i / span for i, c in enumerate(categories)}
        if len(categories) == 1:
            codes = {categories[0]: 0.5}
        positions = [codes.get(v, math.nan) for v in column]
        return positions, list(codes.values()), [str(c) for c in categories], False
    raw = column.astype(float).to_numpy()
    low, high = float(np.nanmin(raw)), float(np.nanmax(raw))
    log = low > 0 and high / low >= 100
    scaled = np.log10(raw) if log else raw
    lo, hi = (math.log10(low), math.log10(high)) if log else (low, high)
    if hi == lo:
        positions = [0.5 if v == v else math.nan for v in raw]
        return positions, [0.5], [f"{low:.4g}"], log
    positions = list((scaled - lo) / (hi - lo))
    ticks = [0.0, 0.5, 1.0]
    labels = [f"{10 ** (lo + t * (hi - lo)) if log else lo + t * (hi - lo):.3g}" for t in ticks]
    return positions, ticks, labels, log


def parallel_coordinates(data: SweepData) -> Figure:
    """One vertical axis per config param plus the metric; one line per trial, coloured by
    the trial's ranked value (best, or last per the sweep's ``rank_by``).

    Numeric params are scaled to their observed min/max (log10 when positive and spanning two
    decades or more); categorical and boolean params are drawn as codes with their values as
    tick labels. A param missing for a trial (a conditional branch it did not take) sits on
    the ``n/a`` mark below its axis. Params with one value only are left out.
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    params = param_frame(data)
    values = objective(data)
    keep = values.notna().to_numpy()
    params, values = params[keep], values[keep]
    columns = [c for c in params.columns if params[c].nunique(dropna=False) > 1]
    figure, axes = _figure(max(6.0, 1.7 * (len(columns) + 1) + 1.5), 4.8)
    if values.empty:
        _empty(axes, f"no trial reported {data.metric or 'the metric'}")
        return figure
    import pandas as pd

    axis_data = [_axis_values(params[c]) for c in columns]
    axis_data.append(_axis_values(pd.Series(values.to_numpy(), dtype=float)))
    names = [*columns, f"{data.metric} ({data.settings.get('rank_by', 'best')})"]
    # Better is darker, as in the learning curves. The colour range spans the trials that ran to
    # the end when there are two or more, so one early-stopped outlier does not wash out the
    # rest; stopped or errored trials are dashed.
    cmap = colormaps["viridis" if data.mode == "min" else "viridis_r"]
    complete = (data.trials["status"] == "finished").to_numpy()[keep]
    scale = values[complete] if complete.sum() >= 2 else values
    low, high = float(scale.min()), float(scale.max())
    norm = Normalize(vmin=low, vmax=high if high > low else low + 1e-12, clip=True)
    missing = -0.12
    xs = list(range(len(names)))
    order = values.sort_values(ascending=data.mode != "min").index  # best drawn last
    row_of = {index: i for i, index in enumerate(values.index)}
    for index in order:
        i = row_of[index]
        ys = [p[0][i] if p[0][i] == p[0][i] else missing for p in axis_data]
        ls = "-" if complete[i] else "--"
        axes.plot(xs, ys, color=cmap(norm(values[index])), lw=1.8, alpha=0.9, ls=ls)
    for x, (_, ticks, labels, log) in zip(xs, axis_data, strict=True):
        axes.axvline(x, color="0.3", lw=1)
        for tick, label in zip(ticks, labels, strict=True):
            axes.text(x + 0.04, tick, label, fontsize=8, va="center", bbox=_LABEL_BOX)
        if any(p != p for p in axis_data[x][0]):
            axes.text(x + 0.04, missing, "n/a", fontsize=8, va="center", color="0.4")
        if log:
            axes.text(x, 1.04, "log", fontsize=7, ha="center", color="0.4")
    axes.set_xticks(xs, names, rotation=15)
    axes.set_yticks([])
    axes.set_ylim(missing - 0.06, 1.08)
    axes.set_xlim(-0.3, len(names) - 0.4)
    for side in ("left", "right", "top"):
        axes.spines[side].set_visible(False)
    axes.set_title(f"trials across params, coloured by {data.metric}")
    mappable = ScalarMappable(norm=norm, cmap=cmap)
    mappable.set_array([])
    extend = {
        (False, False): "neither",
        (True, False): "min",
        (False, True): "max",
        (True, True): "both",
    }[(float(values.min()) < low, float(values.max()) > high)]
    figure.colorbar(mappable, ax=axes, label=data.metric, extend=extend)
    return figure


def importance_figure(importance: pd.Series) -> Figure:
    """A horizontal bar chart of :func:`~sweeplab.report.parameter_importance`'s result,
    the most important param on top; an empty series draws its note
    (``importance.attrs["note"]``) instead."""
    figure, axes = _figure(7, max(2.0, 0.45 * len(importance) + 1.2))
    if importance.empty:
        _empty(axes, importance.attrs.get("note", "no importance computed"))
        return figure
    ordered = importance.sort_values()
    axes.barh([str(i) for i in ordered.index], ordered.to_numpy(), color="#3b528b")
    for y, value in enumerate(ordered.to_numpy()):
        axes.text(value, y, f" {value:.2f}", va="center", fontsize=8)
    axes.set_xlim(0, max(1.0, float(ordered.max()) * 1.15))
    axes.set_xlabel("fANOVA importance (share of variance)")
    axes.set_title("parameter importance")
    return figure
