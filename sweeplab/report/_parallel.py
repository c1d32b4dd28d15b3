"""Parallel coordinates of every trial, read at a rung: SVG lines, as Optuna draws them.

One line per trial through its status, its value in the view and its params, each axis scaled
to 0..1 with its ticks as annotations (``optuna.visualization.plot_parallel_coordinate`` draws
the same way; plotly's ``Parcoords`` would need WebGL, which a browser without a GPU may lack).
Optuna's own plot draws only COMPLETE trials and cannot show a trial's status, hence this one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeplab.report._views import GREY, View, add_view_buttons, statuses

if TYPE_CHECKING:
    import optuna
    from plotly.graph_objects import Figure

NONE_LABEL = "none"
# The "none" mark sits this share of an axis's span below it (as Optuna's "None" mark).
_MARK_GAP = 0.1
_LINES = ("y", "line.color", "line.width", "customdata", "hovertemplate")
_SCALE = ("marker.cmin", "marker.cmax", "marker.colorbar.title.text")


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


def _param_axis(name: str, trials: list[optuna.trial.FrozenTrial]) -> _Axis:
    """A param's axis: log10 for a log distribution, a tick per choice for a categorical one,
    and a ``none`` mark for the trials without it (a branch they did not take)."""
    from optuna.distributions import CategoricalDistribution

    distribution = next(t.distributions[name] for t in trials if name in t.params)
    if isinstance(distribution, CategoricalDistribution):
        labels = [str(c) for c in distribution.choices]
        index = {label: float(i) for i, label in enumerate(labels)}
        values = [index.get(str(t.params[name])) if name in t.params else None for t in trials]
        texts = [str(t.params.get(name, NONE_LABEL)) for t in trials]
        high = max(len(labels) - 1, 1)
        return _Axis(name, values, texts, 0.0, high, [(i, x) for x, i in index.items()])
    log = bool(getattr(distribution, "log", False))
    numbers = [
        (math.log10(t.params[name]) if log else float(t.params[name])) if name in t.params else None
        for t in trials
    ]
    return _numeric_axis(name, numbers, log=log)


def _status_axis(trials: list[optuna.trial.FrozenTrial], order: list[str]) -> _Axis:
    found = [str(t.user_attrs.get("status")) for t in trials]
    values = [float(order.index(s)) for s in found]
    ticks = [(float(i), s) for i, s in enumerate(order)]
    return _Axis("status", values, found, 0.0, max(len(order) - 1, 1), ticks)


def _colors(view: View, mode: str) -> tuple[list[str], float, float]:
    """Each trial's line colour (by its value at the step, grey without one) and the range
    of the colour scale."""
    import plotly.colors

    reached = [v for v, b in zip(view.values, view.before, strict=True) if v is not None and not b]
    low, high = (min(reached), max(reached)) if reached else (0.0, 1.0)
    scale = plotly.colors.sequential.Viridis
    colors = []
    for value, before in zip(view.values, view.before, strict=True):
        if value is None or before:
            colors.append(GREY)
            continue
        share = (value - low) / (high - low) if high > low else 0.5
        # The best values are the darkest: the low end of Viridis.
        share = share if mode == "min" else 1 - share
        colors.append(plotly.colors.sample_colorscale(scale, [share])[0])
    return colors, low, high


def _traces(
    view: View, axes: list[_Axis], trials: list[optuna.trial.FrozenTrial], mode: str
) -> list[dict[str, Any]]:
    """Every trace of the figure in the view, by the flat names ``Plotly.update`` takes: one
    line per trial (grey ones first, then from the worst value to the best, drawn on top),
    the colour scale, and the legend of the grey lines."""
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
    for i in sorted(range(len(trials)), key=order):
        trial = trials[i]
        name = f"trial {trial.user_attrs.get('trial_id')} ({trial.user_attrs.get('status')})"
        traces.append(
            {
                "y": [column[i] for column in columns],
                "line.color": colors[i],
                "line.width": 1.0 if colors[i] == GREY else 1.6,
                "customdata": [[axis.label, axis.texts[i]] for axis in drawn],
                "hovertemplate": name + "<br>%{customdata[0]}: %{customdata[1]}<extra></extra>",
            }
        )
    scale = {"marker.cmin": low, "marker.cmax": high, "marker.colorbar.title.text": view.axis}
    rest: dict[str, Any] = {"y": [None, None], "line.color": GREY, "line.width": 1.0}
    rest.update({"customdata": [], "hovertemplate": ""})
    return [{**t, **scale} for t in traces] + [{**rest, **scale}, {**rest, **scale}]


def _annotations(view: View, axes: list[_Axis]) -> list[dict[str, Any]]:
    drawn = [axes[0], _numeric_axis(view.axis, view.values), *axes[1:]]
    return [a for index, axis in enumerate(drawn) for a in axis.annotations(index)]


def parallel_coordinates(views: list[View], default: int, mode: str) -> Figure:
    """One line per trial through its status, its value in the view and its params; buttons
    switch the value axis, the colours and the order of the lines between the views."""
    import plotly.graph_objects as go

    trials = views[default].study.get_trials(deepcopy=False)
    names = sorted({name for t in trials for name in t.params})
    axes = [_status_axis(trials, statuses(views[default].study))]
    axes += [_param_axis(name, trials) for name in names]
    labels = [axes[0].label, views[default].axis, *names]
    x = list(range(len(labels)))
    traces = _traces(views[default], axes, trials, mode)
    figure = go.Figure()
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
                "cmin": traces[-1]["marker.cmin"],
                "cmax": traces[-1]["marker.cmax"],
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
        lines = _traces(view, axes, trials, mode)
        restyle = {key: [t[key] for t in lines] for key in (*_LINES, *_SCALE)}
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
