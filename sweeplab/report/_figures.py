"""The report's and the notebook's figures of a sweep: every trial, marked by its status."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Any

from sweeplab.keys import STATUS_DIVERGED
from sweeplab.report._parallel import parallel_coordinates
from sweeplab.report._rungs import _check_rung
from sweeplab.report._study import _objective, _records
from sweeplab.report._table import objective
from sweeplab.report._views import (
    DENSE_TRIALS,
    OTHER_COLOR,
    STATUS_COLORS,
    View,
    add_view_buttons,
    rounded,
    slice_figure,
    statuses,
    sweep_views,
)

if TYPE_CHECKING:
    import optuna
    import pandas as pd
    from plotly.graph_objects import Figure

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData

# fANOVA fits a random forest: a fixed seed makes the importances, and the report, reproducible.
_IMPORTANCE_SEED = 0
# fANOVA's cost grows faster than the number of trials (a 1,000-trial sweep took 47 s a view,
# a seeded sample of this many trials with a value about 1 s).
IMPORTANCE_SAMPLE = 150


def _evaluator() -> Any:
    from optuna.importance import FanovaImportanceEvaluator

    return FanovaImportanceEvaluator(seed=_IMPORTANCE_SEED)


def _importance_params(study: optuna.Study) -> tuple[list[str], str | None]:
    """The params fANOVA can rate, and a note on what it left out (``None`` if nothing)."""
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < 2:
        return [], f"{len(complete)} trial(s) with a value; importance needs at least 2"
    common = set.intersection(*(set(t.params) for t in complete))
    conditional = sorted(set.union(*(set(t.params) for t in complete)) - common)
    varying = sorted(p for p in common if len({repr(t.params[p]) for t in complete}) > 1)
    if not varying:
        return [], "no param varies across the trials with a value"
    # fANOVA needs every param in every trial; the branch choice (`optimizer.name`) is always
    # there and carries its branch's effect.
    note = "conditional params left out: " + ", ".join(conditional) if conditional else None
    return varying, note


def importance_sample(study: optuna.Study, size: int = IMPORTANCE_SAMPLE) -> optuna.Study:
    """The study fANOVA rates: its trials with a value (``study`` itself if it has no other),
    or of more than ``size`` of them, a seeded sample of ``size`` that holds the best one.

    Optuna's plot copies every trial of the study it is given, those without a value too.
    """
    import optuna
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if len(complete) == len(trials) <= size:
        return study
    if len(complete) > size:
        best = (min if study.direction == optuna.study.StudyDirection.MINIMIZE else max)(
            complete, key=lambda t: t.value
        )
        rest = [t for t in complete if t is not best]
        picked = random.Random(_IMPORTANCE_SEED).sample(rest, size - 1)
        complete = sorted([best, *picked], key=lambda t: t.number)
    sample = optuna.create_study(direction=study.direction)
    sample.add_trials(complete)
    return sample


def parameter_importance(study: optuna.Study) -> pd.Series:
    """Each param's share of the objective's variance, by Optuna's fANOVA (seeded).

    Over the study's COMPLETE trials (the finished ones of :func:`sweep_study`, those with a
    value in the view of :func:`rung_study`; of more than ``IMPORTANCE_SAMPLE`` (150), a
    seeded sample of that many with the best one, see :func:`importance_sample`) and the
    params present in all of them that take more than one value; a conditional param is left
    out, the branch choice (``optimizer.name``) carries its branch's effect.

    Returns:
        Importances summing to 1, largest first, named ``importance``. Empty, with the reason
        in ``.attrs["note"]``, when fewer than 2 trials have a value or no param varies; a note
        on the conditional params left out otherwise.
    """
    import optuna
    import pandas as pd

    params, note = _importance_params(study)
    result = pd.Series(dtype=float, name="importance")
    if params:
        importances = optuna.importance.get_param_importances(
            importance_sample(study), evaluator=_evaluator(), params=params
        )
        result = pd.Series(importances, dtype=float, name="importance")
        result = result.sort_values(ascending=False)
    if note:
        result.attrs["note"] = note
    return result


def _note_figure(title: str, note: str) -> Figure:
    import plotly.graph_objects as go

    figure = go.Figure()
    figure.add_annotation(text=note, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    figure.update_layout(title=title, xaxis_visible=False, yaxis_visible=False, height=240)
    return figure


# A learning curve longer than this is drawn through this many of its points.
CURVE_POINTS = 300


def downsample_curve(
    steps: list[tuple[int, float]], mode: str, limit: int = CURVE_POINTS
) -> list[tuple[int, float]]:
    """A curve's ``(step, value)`` points, by step, thinned to at most ``limit``: its first,
    its last, its best (by ``mode``) and evenly spread others; a shorter curve is returned
    whole."""
    if len(steps) <= limit:
        return steps
    pick = min if mode == "min" else max
    best = steps.index(pick(steps, key=lambda point: point[1]))
    kept = {0, len(steps) - 1, best}
    spread = limit - len(kept)
    kept |= {round(i * (len(steps) - 1) / (spread + 1)) for i in range(1, spread + 1)}
    return [steps[i] for i in sorted(kept)]


def learning_curves(views: list[View], metric: str) -> Figure:
    """The objective at each reported step, a line per trial (every trial that reported one;
    a curve of more than ``CURVE_POINTS`` points through that many, its best one among them),
    coloured by status: one trace per status, its trials' lines split by gaps, the trial in
    each point's hover; dotted lines at the rungs of the views."""
    import optuna
    import plotly.graph_objects as go

    # A view by value keeps every step of every trial (a view at a step cuts them there).
    study = next(v.study for v in views if not isinstance(v.key, int))
    mode = "max" if study.direction == optuna.study.StudyDirection.MAXIMIZE else "min"
    trials = [t for t in study.get_trials(deepcopy=False) if t.intermediate_values]
    dense = len(trials) > DENSE_TRIALS
    figure = go.Figure()
    for status in statuses(study):
        x: list[int | None] = []
        y: list[float | None] = []
        text: list[str | None] = []
        for trial in trials:
            if str(trial.user_attrs.get("status")) != status:
                continue
            steps = downsample_curve(sorted(trial.intermediate_values.items()), mode)
            if x:  # a gap ends the previous trial's line
                x.append(None)
                y.append(None)
                text.append(None)
            x += [step for step, _ in steps]
            y += [rounded(value) for _, value in steps]
            text += [str(trial.user_attrs.get("trial_id"))] * len(steps)
        if not x:
            continue
        figure.add_trace(
            go.Scatter(
                x=x,
                y=y,
                text=text,
                mode="lines+markers",
                name=status,
                legendgroup=status,
                legendrank=list(STATUS_COLORS).index(status) if status in STATUS_COLORS else 99,
                line={
                    "color": STATUS_COLORS.get(status, OTHER_COLOR),
                    "width": 1 if dense else 1.5,
                },
                marker={"size": 3 if dense else 5},
                opacity=0.8,
                hovertemplate=f"trial %{{text}} ({status})<br>step %{{x}}: %{{y:.4g}}"
                "<extra></extra>",
            )
        )
    for view in views:
        if isinstance(view.key, int):
            figure.add_vline(x=view.key, line={"dash": "dot", "color": "#999", "width": 1})
    last = max(max(t.intermediate_values) for t in trials)
    figure.update_layout(
        title="Learning curves",
        xaxis={"title": "step (report)", "dtick": max(1, math.ceil(last / 10))},
        yaxis_title=metric,
        legend={"title": {"text": "status"}},
    )
    return figure


def _ranked_values(data: SweepData, name: str) -> dict[str, float | None]:
    """Each trial's value as the sweep ranks it: its best or last value, or of a
    multi-objective sweep the objective's value at the trial's point."""
    if len(data.objectives) > 1:
        return {
            t: (r.values or {}).get(name) if r.has_point else None
            for t, r in _records(data).items()
        }
    values = objective(data)
    return {
        str(data.trials.at[i, "trial_id"]): None if math.isnan(v) else float(v)
        for i, v in values.items()
    }


def optimization_history(data: SweepData, study: optuna.Study, metric: str, mode: str) -> Figure:
    """Every trial with a value in the order Tune created them, at its ranked value, coloured
    by status, and the best value so far (diverged trials, which the sweep ranks last, left
    out of it)."""
    import plotly.graph_objects as go

    values = _ranked_values(data, metric)
    trials = study.get_trials(deepcopy=False)
    figure = go.Figure()
    for status in statuses(study):
        members = [
            t
            for t in trials
            if t.user_attrs.get("status") == status
            and values.get(str(t.user_attrs.get("trial_id"))) is not None
        ]
        if members:
            figure.add_trace(
                go.Scatter(
                    x=[t.number for t in members],
                    y=[values[str(t.user_attrs["trial_id"])] for t in members],
                    text=[str(t.user_attrs["trial_id"]) for t in members],
                    mode="markers",
                    name=status,
                    marker={"color": STATUS_COLORS.get(status, OTHER_COLOR), "size": 9},
                    hovertemplate=f"trial %{{text}} ({status})<br>%{{y:.4g}}<extra></extra>",
                )
            )
    pick = min if mode == "min" else max
    best: list[float] = []
    numbers: list[int] = []
    for t in trials:
        value = values.get(str(t.user_attrs.get("trial_id")))
        if (
            value is not None
            and math.isfinite(value)
            and t.user_attrs.get("status") != STATUS_DIVERGED
        ):
            best.append(value if not best else pick(best[-1], value))
            numbers.append(t.number)
    if best:
        figure.add_trace(
            go.Scatter(
                x=numbers,
                y=best,
                mode="lines",
                line_shape="hv",
                name="best so far",
                line={"color": "#2ca02c"},
                hovertemplate="best so far %{y:.4g}<extra></extra>",
            )
        )
    rank_by = data.settings.get("rank_by", "best") if len(data.objectives) <= 1 else "point"
    figure.update_layout(
        title=f"Optimisation history: {metric} ({rank_by} value of each trial)",
        xaxis_title="trial (in the order Tune created them)",
        yaxis_title=metric,
        legend={"title": {"text": "status"}},
    )
    return figure


def importance_figure(views: list[View], default: int, metric: str) -> Figure:
    """fANOVA's importances in each view (``optuna.visualization.plot_param_importances`` of
    its study), one bar trace whose data the buttons switch; a view without importances shows
    why."""
    import plotly.graph_objects as go
    from optuna import visualization as vis

    def bars(view: View) -> tuple[dict[str, Any], dict[str, Any]]:
        params, note = _importance_params(view.study)
        restyle: dict[str, Any] = {"x": [[]], "y": [[]], "text": [[]], "hovertemplate": [[]]}
        if params:
            drawn = vis.plot_param_importances(
                importance_sample(view.study),
                evaluator=_evaluator(),
                params=params,
                target_name=view.axis,
            )
            (bar,) = drawn.data
            restyle = {k: [list(bar[k])] for k in ("x", "y", "text", "hovertemplate")}
        used = sum(v is not None and not b for v, b in zip(view.values, view.before, strict=True))
        caption = f"fANOVA over the {used} trial(s) with a value"
        if used > IMPORTANCE_SAMPLE:
            caption = (
                f"fANOVA over a seeded sample of {IMPORTANCE_SAMPLE} of the {used} trials "
                "with a value"
            )
        caption += f"; {note}" if note else ""
        layout = {
            "title.text": f"Parameter importance: {view.axis}",
            "annotations": [
                {
                    "text": caption,
                    "showarrow": False,
                    "x": 0,
                    "xanchor": "left",
                    "y": -0.12,
                    "yanchor": "top",
                    "xref": "paper",
                    "yref": "paper",
                }
            ],
        }
        return restyle, layout

    each = [bars(view) for view in views]
    restyle, layout = each[default]
    figure = go.Figure(
        go.Bar(
            x=restyle["x"][0],
            y=restyle["y"][0],
            text=restyle["text"][0],
            hovertemplate=restyle["hovertemplate"][0],
            textposition="outside",
            cliponaxis=False,
            orientation="h",
        )
    )
    add_view_buttons(
        figure,
        views,
        default,
        lambda view: each[views.index(view)],
        title=str(layout["title.text"]),
        height=460,
        top=100,
    )
    figure.update_layout(annotations=layout["annotations"])
    return figure


def sweep_figures(
    data: SweepData,
    *,
    objective: str | None = None,
    space: Space | None = None,
    rung: int | str | None = None,
) -> dict[str, Figure]:
    """The views of a sweep, by title; every trial takes part, coloured by its status.

    - ``optimization history``: each trial's ranked value (its best or last value, as the
      sweep ranks; of a multi-objective sweep the objective's value at its point) in the
      order Tune created them, and the best value so far.
    - ``learning curves``: the objective at each reported step, one line per trial (one trace
      per status; a curve of more than ``CURVE_POINTS`` (300) points through that many); dotted
      lines at the rungs.
    - ``parallel coordinates``: one line per trial through its status, its value in the view
      and its params (log axes for log distributions; a ``none`` mark for a param of a branch
      the trial did not take, and for a trial without a value).
    - ``slice``: each param against the value in the view, one panel per param with the
      trials that have it.
    - ``parameter importance``: fANOVA (Optuna, seeded) over the trials with a value in the
      view.

    The last three can be read in each view of :func:`rung_study`: at each rung (the steps
    where trials stopped), by best value so far, or by last value; plotly buttons above each
    figure switch between them in the page. At a step, a trial that ended before it is drawn
    at its last value, grey in the parallel coordinates and an open marker in the slice.

    Of more than 500 trials (``DENSE_TRIALS``) the figures keep their data compact, every
    trial still in every view: the parallel coordinates draw their lines in one trace per
    colour, without hover, and the slice's hover names the trial and its value.

    Args:
        data: The sweep (`sweeplab.load_sweep`).
        objective: The objective's name; ``None``: the sweep's metric (its first objective).
        space: The sweep's search space (see :func:`sweep_study`).
        rung: The view shown first (a step, ``"best"`` or ``"last"``); ``None``:
            :func:`default_rung`, else the last value.

    Raises:
        ValueError: A bad ``rung`` or ``objective`` (see :func:`rung_study`).
    """
    _check_rung(rung)
    name, mode = _objective(data, objective)
    views, default = sweep_views(data, objective=name, space=space, rung=rung)
    study = views[default].study
    trials = study.get_trials(deepcopy=False)
    figures: dict[str, Figure] = {}
    if not trials:
        for title in ("optimization history", "learning curves", "parallel coordinates", "slice"):
            figures[title] = _note_figure(title.capitalize(), "no trial")
        figures["parameter importance"] = _note_figure("Parameter importance", "no trial")
        return figures
    figures["optimization history"] = optimization_history(data, study, name, mode)
    if any(t.intermediate_values for t in trials):
        figures["learning curves"] = learning_curves(views, name)
    else:
        figures["learning curves"] = _note_figure("Learning curves", f"no {name} points recorded")
    if any(t.params for t in trials):
        figures["parallel coordinates"] = parallel_coordinates(views, default, mode)
        figures["slice"] = slice_figure(views, default)
    else:
        figures["parallel coordinates"] = _note_figure("Parallel coordinates", "no params")
        figures["slice"] = _note_figure("Slice", "no params")
    figures["parameter importance"] = importance_figure(views, default, name)
    return figures
