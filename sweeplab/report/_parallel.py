"""Parallel coordinates of every trial, read at a rung: SVG lines, as Optuna draws them.

One line per trial through its status, its value in the view and its params, each axis scaled
to 0..1 with its ticks as annotations (``optuna.visualization.plot_parallel_coordinate`` draws
the same way; plotly's ``Parcoords`` would need WebGL, which a browser without a GPU may lack).
Optuna's own plot draws only COMPLETE trials and cannot show a trial's status, hence this one.
Of more than ``DENSE_TRIALS`` trials, the lines are drawn in one trace per colour, without hover.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeplab.report._views import (
    DENSE_TRIALS,
    GREY,
    SweepTrials,
    View,
    add_view_buttons,
    packed,
    rounded,
    statuses,
)

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

NONE_LABEL = "none"
# The "none" mark sits this share of an axis's span below it (as Optuna's "None" mark).
_MARK_GAP = 0.1
_LINES = ("y", "line.color", "line.width", "customdata", "hovertemplate")
_DENSE_LINES = ("x", "y")
# A dense figure's lines take this many colours of the scale (and grey).
_BINS = 16
# Significant digits of a line's place on an axis (0..1): a tenth of a pixel.
_POSITION_DIGITS = 4


@dataclass(frozen=True)
class _Axis:
    """One vertical axis: each trial's position on it (``None``: on its ``none`` mark)."""

    label: str
    values: Sequence[float | None]
    texts: list[str]  # each trial's value as its hover shows it
    low: float
    high: float
    ticks: list[tuple[float, str]]

    @property
    def mark(self) -> float | None:
        """Where the ``none`` mark is, when a trial sits on it."""
        if all(v is not None for v in self.values):
            return None
        return self.low - _MARK_GAP * (self.high - self.low)

    def scaled(self) -> list[float]:
        """Each trial's position, 0 at the bottom of the axis (its mark) to 1 at the top."""
        bottom = self.low if self.mark is None else self.mark
        return [((bottom if v is None else v) - bottom) / (self.high - bottom) for v in self.values]

    def annotations(self, index: int) -> list[dict[str, Any]]:
        bottom = self.low if self.mark is None else self.mark
        ticks = self.ticks if self.mark is None else [(self.mark, NONE_LABEL), *self.ticks]
        return [
            {
                "x": index,
                "y": (value - bottom) / (self.high - bottom),
                "text": text,
                "showarrow": False,
                "xanchor": "right",
                "xshift": -3,
                "font": {"size": 10, "color": "#555"},
            }
            for value, text in ticks
        ]


def _numeric_axis(label: str, values: Sequence[float | None], *, log: bool = False) -> _Axis:
    """An axis over the trials' numbers (their log10 on a log axis), with about 5 ticks."""
    present = [v for v in values if v is not None]
    low, high = (min(present), max(present)) if present else (0.0, 1.0)
    if high <= low:
        low, high = low - 0.5, high + 0.5
    if log:
        ticks = sorted({low, high, *range(math.ceil(low), math.floor(high) + 1)})
        labels = [f"{10**t:.3g}" for t in ticks]
    else:
        ticks = [low + (high - low) * i / 4 for i in range(5)]
        labels = [f"{t:.3g}" for t in ticks]
    texts = [NONE_LABEL if v is None else f"{10**v if log else v:.4g}" for v in values]
    return _Axis(label, values, texts, low, high, list(zip(ticks, labels, strict=True)))


def _param_axis(name: str, trials: SweepTrials) -> _Axis:
    """A param's axis: log10 for a log distribution, a tick per choice for a categorical one,
    and a ``none`` mark for the trials without it (a branch they did not take)."""
    from optuna.distributions import CategoricalDistribution

    distribution = trials.distributions[name]
    params = [row.params for row in trials.rows]
    if isinstance(distribution, CategoricalDistribution):
        labels = [str(c) for c in distribution.choices]
        index = {label: float(i) for i, label in enumerate(labels)}
        values = [index.get(str(p[name])) if name in p else None for p in params]
        texts = [str(p.get(name, NONE_LABEL)) for p in params]
        high = max(len(labels) - 1, 1)
        return _Axis(name, values, texts, 0.0, high, [(i, x) for x, i in index.items()])
    log = bool(getattr(distribution, "log", False))
    numbers = [
        (math.log10(p[name]) if log else float(p[name])) if name in p else None for p in params
    ]
    return _numeric_axis(name, numbers, log=log)


def _status_axis(trials: SweepTrials, order: list[str]) -> _Axis:
    found = trials.statuses
    values = [float(order.index(s)) for s in found]
    ticks = [(float(i), s) for i, s in enumerate(order)]
    return _Axis("status", values, found, 0.0, max(len(order) - 1, 1), ticks)


def _shares(view: View, mode: str) -> tuple[list[float | None], float, float]:
    """Each trial's place on the colour scale, 0 (the best value) to 1 (``None``: grey, no
    value at the step), and the range of the scale."""
    reached = [v for v, b in zip(view.values, view.before, strict=True) if v is not None and not b]
    low, high = (min(reached), max(reached)) if reached else (0.0, 1.0)
    shares: list[float | None] = []
    for value, before in zip(view.values, view.before, strict=True):
        if value is None or before:
            shares.append(None)
            continue
        share = (value - low) / (high - low) if high > low else 0.5
        # The best values are the darkest: the low end of Viridis.
        shares.append(share if mode == "min" else 1 - share)
    return shares, low, high


def _colors(view: View, mode: str) -> tuple[list[str], float, float]:
    """Each trial's line colour (by its value at the step, grey without one) and the range
    of the colour scale."""
    import plotly.colors

    shares, low, high = _shares(view, mode)
    scale = plotly.colors.sequential.Viridis
    colors = [
        GREY if share is None else plotly.colors.sample_colorscale(scale, [share])[0]
        for share in shares
    ]
    return colors, low, high


def _scale(view: View, low: float, high: float) -> dict[str, Any]:
    # One value each: plotly.js gives a restyle's short array to its traces in turn.
    return {
        "marker.cmin": [rounded(low)],
        "marker.cmax": [rounded(high)],
        "marker.colorbar.title.text": [view.axis],
    }


def _traces(
    view: View, axes: list[_Axis], trials: SweepTrials, mode: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every line of the figure in the view, by the flat names ``Plotly.update`` takes: one
    line per trial (grey ones first, then from the worst value to the best, drawn on top),
    then those of the colour scale and of the legend of the grey lines; and the scale's
    range."""
    value_axis = _numeric_axis(view.axis, view.values)
    drawn = [axes[0], value_axis, *axes[1:]]
    columns = [axis.scaled() for axis in drawn]
    colors, low, high = _colors(view, mode)
    sign = 1 if mode == "min" else -1

    def order(i: int) -> tuple[int, float]:
        value = view.values[i]
        grey = colors[i] == GREY
        return (0, 0.0) if grey or value is None else (1, -sign * value)

    traces = []
    for i in sorted(range(len(trials.rows)), key=order):
        row = trials.rows[i]
        name = f"trial {row.trial_id} ({row.status})"
        traces.append(
            {
                "y": [rounded(column[i], _POSITION_DIGITS) for column in columns],
                "line.color": colors[i],
                "line.width": 1.0 if colors[i] == GREY else 1.6,
                "customdata": [[axis.label, axis.texts[i]] for axis in drawn],
                "hovertemplate": name + "<br>%{customdata[0]}: %{customdata[1]}<extra></extra>",
            }
        )
    rest: dict[str, Any] = {"y": [None, None], "line.color": GREY, "line.width": 1.0}
    rest.update({"customdata": [], "hovertemplate": ""})
    return [*traces, rest, rest], _scale(view, low, high)


def _bin_colors() -> list[str]:
    import plotly.colors

    shares = [(b + 0.5) / _BINS for b in reversed(range(_BINS))]
    return [GREY, *plotly.colors.sample_colorscale(plotly.colors.sequential.Viridis, shares)]


def _dense_traces(
    view: View, axes: list[_Axis], trials: SweepTrials, mode: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The lines of a dense figure in the view: one trace per colour of ``_bin_colors`` (grey,
    then the scale's ``_BINS`` colours from the worst value to the best, drawn on top), each
    trial's line in the trace of its colour, the lines split by gaps; then the colour scale's
    and the legend's; and the scale's range."""
    value_axis = _numeric_axis(view.axis, view.values)
    drawn = [axes[0], value_axis, *axes[1:]]
    columns = [[rounded(v, _POSITION_DIGITS) for v in axis.scaled()] for axis in drawn]
    shares, low, high = _shares(view, mode)
    bins: list[dict[str, list[Any]]] = [{"x": [], "y": []} for _ in range(_BINS + 1)]
    # A line ends at a point without a y (NaN): its x there can be any axis, so the x column
    # fits in bytes.
    ticks = [*range(len(drawn)), 0]
    for i, share in enumerate(shares):
        line = bins[0 if share is None else _BINS - min(int(share * _BINS), _BINS - 1)]
        line["x"] += ticks
        line["y"] += [*(column[i] for column in columns), None]
    places = "uint8" if len(drawn) < 256 else "uint16"
    packs = [{"x": packed(b["x"], places), "y": packed(b["y"])} for b in bins]
    rest: dict[str, Any] = {"x": [None, None], "y": [None, None]}
    return [*packs, rest, rest], _scale(view, low, high)


def _annotations(view: View, axes: list[_Axis]) -> list[dict[str, Any]]:
    drawn = [axes[0], _numeric_axis(view.axis, view.values), *axes[1:]]
    return [a for index, axis in enumerate(drawn) for a in axis.annotations(index)]


def parallel_coordinates(views: list[View], default: int, mode: str) -> Figure:
    """One line per trial through its status, its value in the view and its params; buttons
    switch the value axis, the colours and the order of the lines between the views."""
    import plotly.graph_objects as go

    trials = views[default].trials
    names = sorted({name for row in trials.rows for name in row.params})
    axes = [_status_axis(trials, statuses(trials.statuses))]
    axes += [_param_axis(name, trials) for name in names]
    labels = [axes[0].label, views[default].axis, *names]
    x = list(range(len(labels)))
    # A dense figure draws its lines in a few traces, one per colour, without hover: a trace
    # and a hover text per trial made a 10,000-trial page too large to open.
    dense = len(trials.rows) > DENSE_TRIALS
    each = _dense_traces if dense else _traces
    traces, scale = each(views[default], axes, trials, mode)
    figure = go.Figure()
    if dense:
        for trace, color in zip(traces[:-2], _bin_colors(), strict=True):
            figure.add_trace(
                go.Scatter(
                    x=trace["x"],
                    y=trace["y"],
                    mode="lines",
                    line={"color": color, "width": 1.0},
                    opacity=0.6,
                    hoverinfo="skip",
                    showlegend=False,
                )
            )
    else:
        for trace in traces[:-2]:
            figure.add_trace(
                go.Scatter(
                    x=x,
                    y=trace["y"],
                    mode="lines",
                    line={"color": trace["line.color"], "width": trace["line.width"]},
                    opacity=0.8,
                    customdata=trace["customdata"],
                    hovertemplate=trace["hovertemplate"],
                    showlegend=False,
                )
            )
    figure.add_trace(
        go.Scatter(
            x=[None, None],
            y=[None, None],
            mode="markers",
            marker={
                "color": [0, 1],
                "cmin": scale["marker.cmin"][0],
                "cmax": scale["marker.cmax"][0],
                "colorscale": "Viridis",
                "reversescale": mode == "max",
                "showscale": True,
                "colorbar": {"title": {"text": views[default].axis, "side": "right"}},
            },
            showlegend=False,
            hoverinfo="skip",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[None, None],
            y=[None, None],
            mode="lines",
            line={"color": GREY, "width": 2},
            name="ended before the step, or no value",
            hoverinfo="skip",
        )
    )

    def update(view: View) -> tuple[dict[str, Any], dict[str, Any]]:
        lines, scale = each(view, axes, trials, mode)
        keys = _DENSE_LINES if dense else _LINES
        restyle = {key: [t[key] for t in lines] for key in keys} | scale
        relayout = {
            "title.text": _title(view),
            "xaxis.ticktext": [axes[0].label, view.axis, *names],
            "annotations": _annotations(view, axes),
        }
        return restyle, relayout

    figure.update_layout(
        xaxis={
            "tickmode": "array",
            "tickvals": x,
            "ticktext": labels,
            "range": [-0.4, len(labels) - 0.8],
            "showgrid": False,
            "zeroline": False,
        },
        yaxis={"range": [-0.06, 1.06], "visible": False, "fixedrange": True},
        annotations=_annotations(views[default], axes),
        shapes=[
            {
                "type": "line",
                "x0": i,
                "x1": i,
                "y0": 0,
                "y1": 1,
                "line": {"color": "#888", "width": 1},
                "layer": "below",
            }
            for i in x
        ],
        hovermode="closest",
        plot_bgcolor="white",
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
    )
    add_view_buttons(
        figure, views, default, update, title=_title(views[default]), height=520, top=110
    )
    return figure


def _title(view: View) -> str:
    return f"Parallel coordinates: {view.axis}"
