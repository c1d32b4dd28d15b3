"""The views of a sweep at a rung: one study per view, the buttons that switch them, the slice.

Optuna's plots draw only COMPLETE trials (its learning curves leave out FAIL ones too) and
cannot mark a trial's status, so the views are drawn with plotly from the studies of
:func:`rung_study`, one per view. A figure holds every view; plotly's own buttons
(``layout.updatemenus``) switch between them inside the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeplab.keys import (
    STATUS_DIVERGED,
    STATUS_ERRORED,
    STATUS_FINISHED,
    STATUS_RUNNING,
    STATUS_STOPPED_EARLY,
)
from sweeplab.report._rungs import BEST, LAST, default_rung, rung_study, sweep_rungs

if TYPE_CHECKING:
    import optuna
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
class View:
    """The sweep read one way: at a step, or by each trial's best or last value.

    Attributes:
        key: The step, ``"best"`` or ``"last"`` (see :func:`rung_study`).
        study: Its :func:`rung_study`; its trials are the sweep's, in the same order in
            every view.
        button: The label of its button.
        axis: The name of the value it reads (``loss at step 3``).
        values: Per trial: its value in the view; of a trial that ended before the step, its
            last value; ``None`` without either.
        before: Per trial: it ended before the step (``values`` holds its last value).
    """

    key: int | str
    study: optuna.Study
    button: str
    axis: str
    values: list[float | None]
    before: list[bool]


def _view(key: int | str, study: optuna.Study, metric: str) -> View:
    from optuna.trial import TrialState

    values: list[float | None] = []
    before: list[bool] = []
    for trial in study.get_trials(deepcopy=False):
        ended_before = trial.state == TrialState.PRUNED and bool(trial.intermediate_values)
        if trial.state == TrialState.COMPLETE:
            values.append(trial.value)
        elif ended_before:
            values.append(trial.intermediate_values[max(trial.intermediate_values)])
        else:
            values.append(None)
        before.append(ended_before)
    if key == BEST:
        button, axis = "best so far", f"best {metric} so far"
    elif key == LAST:
        button, axis = "last value", f"last {metric}"
    else:
        button, axis = f"step {key}", f"{metric} at step {key}"
    return View(key, study, button, axis, values, before)


def sweep_views(
    data: SweepData,
    *,
    objective: str | None = None,
    space: Space | None = None,
    rung: int | str | None = None,
) -> tuple[list[View], int]:
    """Every view of a sweep (its rungs, then best so far and last value), and the index of
    the one shown first: ``rung``, else the default rung, else the last value."""
    rungs = sweep_rungs(data, objective=objective, space=space)
    if rung is None:
        rung = default_rung(data, objective=objective, space=space) or LAST
    if isinstance(rung, int) and rung not in rungs:
        rungs = sorted([*rungs, rung])
    metric = objective or data.metric or "objective"
    keys: list[int | str] = [*rungs, BEST, LAST]
    views = [
        _view(key, rung_study(data, key, objective=objective, space=space), metric) for key in keys
    ]
    return views, [v.key for v in views].index(rung)


def statuses(study: optuna.Study) -> list[str]:
    """The statuses of a study's trials, in the order of ``STATUS_COLORS``, then others."""
    seen = {str(t.user_attrs.get("status")) for t in study.get_trials(deepcopy=False)}
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
            {"label": view.button, "method": "update", "args": list(update(view))} for view in views
        ],
    }
    figure.update_layout(
        title={"text": title, "y": 1 - _TITLE_PX / height, "yanchor": "top", "x": 0.02},
        updatemenus=[menu],
        height=height,
        margin={"t": top, "b": bottom},
    )


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

    study = views[default].study
    trials = study.get_trials(deepcopy=False)
    # A dense slice keeps its hover text per trial (not per view) and its symbols as plotly's
    # numbers (0: circle, 100: circle-open). It stays SVG: WebGL (`Scattergl`) draws in a
    # browser without a GPU only through Chromium's software fallback, which is deprecated.
    dense = len(trials) > DENSE_TRIALS
    names = sorted({name for t in trials for name in t.params})
    cols = min(len(names), 4)
    rows = math.ceil(len(names) / cols)
    figure = make_subplots(
        rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.04, vertical_spacing=0.18
    )
    groups: list[list[int]] = []  # per trace: the trials (by position) it draws
    order = statuses(study)
    for panel, name in enumerate(names):
        row, col = divmod(panel, cols)
        distribution = next(t.distributions[name] for t in trials if name in t.params)
        categorical = isinstance(distribution, CategoricalDistribution)
        for status in order:
            members = [
                i
                for i, t in enumerate(trials)
                if name in t.params and t.user_attrs.get("status") == status
            ]
            if not members:
                continue
            groups.append(members)
            x = [trials[i].params[name] for i in members]
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

    trial_ids = [str(t.user_attrs.get("trial_id")) for t in trials]

    def points(view: View) -> dict[str, Any]:
        y: list[list[float | None]] = []
        symbols: list[list[int] | list[str]] = []
        text: list[list[str]] = []
        for members in groups:
            y.append([rounded(view.values[i]) for i in members])
            if dense:
                symbols.append([100 if view.before[i] else 0 for i in members])
            else:
                symbols.append(["circle-open" if view.before[i] else "circle" for i in members])
                text.append([_point_text(view, trial_ids[i], trials[i], i) for i in members])
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


def _point_text(view: View, trial_id: str, trial: optuna.trial.FrozenTrial, index: int) -> str:
    status = trial.user_attrs.get("status")
    value = view.values[index]
    if value is None:
        return f"trial {trial_id} ({status}): no value"
    if view.before[index]:
        last = max(trial.intermediate_values)
        return f"trial {trial_id} ({status}): ended at step {last}, last value {_fmt(value)}"
    return f"trial {trial_id} ({status}): {_fmt(value)}"


def _slice_title(view: View) -> str:
    return f"Slice: {view.axis}"
