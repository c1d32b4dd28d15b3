"""The views of a sweep at a rung: each trial's value per view, the buttons that switch them,
the slice.

Optuna's plots draw only COMPLETE trials (its learning curves leave out FAIL ones too) and
cannot mark a trial's status, so the views are drawn with plotly from each trial's value in
the view, as :func:`rung_study` reads it. A figure holds every view; plotly's own buttons
(``layout.updatemenus``) switch between them inside the page.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeplab.keys import (
    STATUS_DIVERGED,
    STATUS_ERRORED,
    STATUS_FINISHED,
    STATUS_RUNNING,
    STATUS_STOPPED_EARLY,
)
from sweeplab.report._rungs import BEST, LAST, _default_from, _rungs_from, _value_at
from sweeplab.report._study import TrialRow, _curves, _objective, trial_rows

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from plotly.graph_objects import Figure

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData

STATUS_COLORS = {
    STATUS_FINISHED: "#1f77b4",
    STATUS_STOPPED_EARLY: "#ff7f0e",
    STATUS_DIVERGED: "#d62728",
    STATUS_ERRORED: "#8c564b",
    STATUS_RUNNING: "#9467bd",
}
OTHER_COLOR = "#333333"
GREY = "#c7c7c7"  # a trial without a value in the view, or one that ended before its rung
# Past this many trials a figure's per-view data are kept compact (a few bytes a trial and
# view): a 10,000-trial sweep drawn one trace and one hover text per trial made a 75 MB page.
DENSE_TRIALS = 500
# Significant digits of a value in a figure's data: more than a plot can show, fewer bytes.
DIGITS = 6


@dataclass(frozen=True)
class SweepTrials:
    """The trials every view of a sweep shares, in the order Tune created them.

    Attributes:
        rows: Each trial's ids, status and params (:func:`trial_rows`).
        distributions: The params' distributions, by dotted name.
        curves: Per trial: the objective's finite values by step (every step).
        mode: The objective's mode, ``min`` or ``max``.
    """

    rows: list[TrialRow]
    distributions: dict[str, BaseDistribution]
    curves: list[dict[int, float]]
    mode: str

    @property
    def ids(self) -> list[str]:
        return [row.trial_id for row in self.rows]

    @property
    def statuses(self) -> list[str]:
        return [row.status for row in self.rows]


@dataclass(frozen=True)
class View:
    """The sweep read one way: at a step, or by each trial's best or last value.

    Each view holds the values of the trials of :func:`rung_study` in that view, computed from
    the sweep's columns, not from a study per view: Optuna copies every trial added to a study,
    which at 10,000 trials cost more than drawing every figure.

    Attributes:
        key: The step, ``"best"`` or ``"last"`` (see :func:`rung_study`).
        trials: The sweep's trials, the same in every view.
        button: The label of its button.
        axis: The name of the value it reads (``loss at step 3``).
        values: Per trial: its value in the view; of a trial that ended before the step, its
            last value; ``None`` without either.
        before: Per trial: it ended before the step (``values`` holds its last value).
    """

    key: int | str
    trials: SweepTrials
    button: str
    axis: str
    values: list[float | None]
    before: list[bool]

    def rated(self) -> list[int]:
        """The trials (by position) with a value in the view, the COMPLETE ones of its
        :func:`rung_study`."""
        return [
            i
            for i, (v, b) in enumerate(zip(self.values, self.before, strict=True))
            if v is not None and not b
        ]


def _view(key: int | str, trials: SweepTrials, metric: str) -> View:
    values: list[float | None] = []
    before: list[bool] = []
    for row, steps in zip(trials.rows, trials.curves, strict=True):
        state, value, _ = _value_at(key, steps, row.status, trials.mode)
        ended_before = state == "PRUNED"  # it has steps, all before the rung
        values.append(steps[max(steps)] if ended_before else value)
        before.append(ended_before)
    if key == BEST:
        button, axis = "best so far", f"best {metric} so far"
    elif key == LAST:
        button, axis = "last value", f"last {metric}"
    else:
        button, axis = f"step {key}", f"{metric} at step {key}"
    return View(key, trials, button, axis, values, before)


def sweep_views(
    data: SweepData,
    *,
    objective: str | None = None,
    space: Space | None = None,
    rung: int | str | None = None,
) -> tuple[list[View], int]:
    """Every view of a sweep (its rungs, then best so far and last value), and the index of
    the one shown first: ``rung``, else the default rung, else the last value."""
    name, mode = _objective(data, objective)
    curves = _curves(data, name)  # read once: the rungs, the default and every view use them
    default = _default_from(data, curves, space)
    rungs = _rungs_from(data, curves, default)
    if rung is None:
        rung = default or LAST
    if isinstance(rung, int) and rung not in rungs:
        rungs = sorted([*rungs, rung])
    metric = objective or data.metric or "objective"
    rows, distributions = trial_rows(data, space)
    trials = SweepTrials(rows, distributions, [curves.get(r.trial_id, {}) for r in rows], mode)
    keys: list[int | str] = [*rungs, BEST, LAST]
    views = [_view(key, trials, metric) for key in keys]
    return views, [v.key for v in views].index(rung)


def statuses(found: list[str]) -> list[str]:
    """The statuses found, once each, in the order of ``STATUS_COLORS``, then others."""
    seen = set(found)
    known = [s for s in STATUS_COLORS if s in seen]
    return known + sorted(seen - set(known))


# Pixels from the figure's top: the title's line, then the row of view buttons.
_TITLE_PX = 14
_BUTTONS_PX = 50


def add_view_buttons(
    figure: Figure,
    views: list[View],
    default: int,
    update: Any,
    *,
    title: str,
    height: int,
    top: int,
    bottom: int = 80,
) -> None:
    """Puts one button per view under the figure's title, ``top`` pixels above the plot.

    ``update(view) -> (restyle, relayout[, trace indices])`` gives what the view's button
    changes, as ``Plotly.update`` takes it.
    """
    plot = height - top - bottom
    menu = {
        "type": "buttons",
        "direction": "right",
        "active": default,
        "showactive": True,
        "x": 0,
        "xanchor": "left",
        "y": 1 + (top - _BUTTONS_PX) / plot,
        "yanchor": "top",
        "pad": {"r": 4, "t": 0},
        "buttons": [
            {"label": view.button, "method": "update", "args": typed_arrays(list(update(view)))}
            for view in views
        ],
    }
    figure.update_layout(
        title={"text": title, "y": 1 - _TITLE_PX / height, "yanchor": "top", "x": 0.02},
        updatemenus=[menu],
        height=height,
        margin={"t": top, "b": bottom},
    )


def packed(values: Sequence[float | None], dtype: str = "float32") -> Any:
    """A dense figure's numbers as a numpy array (``None``: NaN, a gap in a line).

    plotly writes a figure's numpy arrays, and `add_view_buttons` its buttons' ones, as typed
    arrays (the base64 of their bytes), which plotly.js reads in a newPlot and in a button's
    update alike. At 10,000 trials the lists of Python floats that the view buttons held made
    most of the figures' time in plotly (validated, then deep-copied twice). Float32 keeps about
    7 significant digits, more than the figures show.
    """
    import numpy as np

    return np.array(values, dtype=dtype)


# numpy's dtypes that plotly.js reads from a typed array spec, by its codes.
TYPED_ARRAY_CODES = {
    "int8": "i1",
    "uint8": "u1",
    "int16": "i2",
    "uint16": "u2",
    "int32": "i4",
    "uint32": "u4",
    "float32": "f4",
    "float64": "f8",
}


def typed_arrays(value: Any) -> Any:
    """`value` with each 1-d numpy array in it (in dicts, lists and tuples) as plotly.js's typed
    array spec ``{"dtype": "f4", "bdata": <base64 of its little-endian bytes>}``.

    plotly converts a trace's arrays itself, but not the arrays inside a button's arguments,
    which it would write as JSON lists (of float32 values at full length: a larger page).
    """
    if isinstance(value, dict):
        return {key: typed_arrays(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [typed_arrays(item) for item in value]
    code = TYPED_ARRAY_CODES.get(str(getattr(value, "dtype", "")))
    if code is None or getattr(value, "ndim", 0) != 1 or not value.size:
        return value
    import numpy as np

    little = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
    return {"dtype": code, "bdata": base64.b64encode(little.tobytes()).decode("ascii")}


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def rounded(value: float | None, digits: int = DIGITS) -> float | None:
    """A float to ``digits`` significant digits, as the figures' JSON holds it (``None``, an
    int and a non-finite float stay as they are)."""
    if value is None or isinstance(value, int) or not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


def slice_figure(views: list[View], default: int) -> Figure:
    """One panel per param: each trial that has it, its param value against its value in the
    view; colour: its status; an open marker: a trial that ended before the step, at its last
    value. Buttons switch the values between the views."""
    import plotly.graph_objects as go
    from optuna.distributions import CategoricalDistribution
    from plotly.subplots import make_subplots

    trials = views[default].trials
    entries = trials.rows
    # A dense slice keeps its hover text per trial (not per view) and its symbols as plotly's
    # numbers (0: circle, 100: circle-open). It stays SVG: WebGL (`Scattergl`) draws in a
    # browser without a GPU only through Chromium's software fallback, which is deprecated.
    dense = len(entries) > DENSE_TRIALS
    names = sorted({name for row in entries for name in row.params})
    cols = min(len(names), 4)
    rows = math.ceil(len(names) / cols)
    figure = make_subplots(
        rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.04, vertical_spacing=0.18
    )
    groups: list[list[int]] = []  # per trace: the trials (by position) it draws
    order = statuses(trials.statuses)
    for panel, name in enumerate(names):
        row, col = divmod(panel, cols)
        distribution = trials.distributions[name]
        categorical = isinstance(distribution, CategoricalDistribution)
        for status in order:
            members = [
                i for i, row in enumerate(entries) if name in row.params and row.status == status
            ]
            if not members:
                continue
            groups.append(members)
            x = [entries[i].params[name] for i in members]
            hover = "%{text}<br>" + name + " %{x}<extra></extra>"
            if dense:
                hover = f"trial %{{text}} ({status}): %{{y:.4g}}<br>{name} %{{x}}<extra></extra>"
            figure.add_trace(
                go.Scatter(
                    x=[str(v) for v in x] if categorical else [rounded(v) for v in x],
                    mode="markers",
                    name=status,
                    legendgroup=status,
                    showlegend=False,
                    marker={
                        "color": STATUS_COLORS.get(status, OTHER_COLOR),
                        "size": 5 if dense else 9,
                    },
                    hovertemplate=hover,
                ),
                row=row + 1,
                col=col + 1,
            )
        axis = {"title_text": name, "row": row + 1, "col": col + 1}
        if categorical:
            labels = [str(c) for c in distribution.choices]
            figure.update_xaxes(
                type="category", categoryorder="array", categoryarray=labels, **axis
            )
        elif getattr(distribution, "log", False):
            figure.update_xaxes(type="log", **axis)
        else:
            figure.update_xaxes(**axis)

    # The legend: filled markers for the statuses (a point's marker may be open), and what an
    # open one means.
    legend = [(s, STATUS_COLORS.get(s, OTHER_COLOR), "circle") for s in order]
    legend.append(("ended before the step", "#555555", "circle-open"))
    for label, color, symbol in legend:
        figure.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=label,
                legendgroup=label if symbol == "circle" else None,
                marker={"color": color, "size": 9, "symbol": symbol},
                hoverinfo="skip",
            )
        )

    trial_ids = trials.ids

    def points(view: View) -> dict[str, Any]:
        y: list[Any] = []  # per trace: numpy arrays when dense, else lists
        symbols: list[Any] = []
        text: list[list[str]] = []
        for members in groups:
            if dense:
                y.append(packed([rounded(view.values[i]) for i in members]))
                symbols.append(packed([100 if view.before[i] else 0 for i in members], "uint8"))
            else:
                y.append([rounded(view.values[i]) for i in members])
                symbols.append(["circle-open" if view.before[i] else "circle" for i in members])
                text.append([_point_text(view, i) for i in members])
        if dense:
            return {"y": y, "marker.symbol": symbols}
        return {"y": y, "marker.symbol": symbols, "text": text}

    def update(view: View) -> tuple[dict[str, Any], dict[str, Any], list[int]]:
        relayout = {"title.text": _slice_title(view), "yaxis.title.text": view.axis}
        return points(view), relayout, list(range(len(groups)))

    first = points(views[default])
    for index, trace in enumerate(figure.data[: len(groups)]):
        trace.update(y=first["y"][index], marker_symbol=first["marker.symbol"][index])
        if dense:
            trace.update(text=[trial_ids[i] for i in groups[index]])
        else:
            trace.update(text=first["text"][index])
    figure.update_yaxes(title_text=views[default].axis, row=1, col=1)
    add_view_buttons(
        figure,
        views,
        default,
        update,
        title=_slice_title(views[default]),
        height=180 + 280 * rows,
        top=100,
    )
    figure.update_layout(legend={"title": {"text": "status"}})
    return figure


def _point_text(view: View, index: int) -> str:
    row = view.trials.rows[index]
    trial_id, status = row.trial_id, row.status
    value = view.values[index]
    if value is None:
        return f"trial {trial_id} ({status}): no value"
    if view.before[index]:
        last = max(view.trials.curves[index])
        return f"trial {trial_id} ({status}): ended at step {last}, last value {_fmt(value)}"
    return f"trial {trial_id} ({status}): {_fmt(value)}"


def _slice_title(view: View) -> str:
    return f"Slice: {view.axis}"
