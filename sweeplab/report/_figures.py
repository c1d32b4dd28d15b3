"""The report's and the notebook's figures of a sweep: every trial, marked by its status."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Any

from sweeplab.keys import STATUS_DIVERGED
from sweeplab.report._study import _records
from sweeplab.report._table import objective
from sweeplab.report._views import (
    DENSE_TRIALS,
    OTHER_COLOR,
    STATUS_COLORS,
    SweepTrials,
    View,
    add_view_buttons,
    rounded,
    statuses,
)

if TYPE_CHECKING:
    import optuna
    import pandas as pd
    from plotly.graph_objects import Figure

    from sweeplab.tracking import SweepData

# fANOVA fits a random forest: a fixed seed makes the importances, and the report, reproducible.
_IMPORTANCE_SEED = 0
# fANOVA's cost grows faster than the number of trials (a 1,000-trial sweep took 47 s a view,
# a seeded sample of this many trials with a value about 1 s).
IMPORTANCE_SAMPLE = 150


# Optuna's default forest. A dense sweep's other views, which the reader opens on demand, are
# rated by a smaller one: fANOVA's time grows with the trees, and it was most of the report's.
_TREES = 64
_VIEW_TREES = 16


def _evaluator(trees: int = _TREES) -> Any:
    from optuna.importance import FanovaImportanceEvaluator

    return FanovaImportanceEvaluator(n_trees=trees, seed=_IMPORTANCE_SEED)


def _importance_params(complete: list[dict[str, Any]]) -> tuple[list[str], str | None]:
    """The params fANOVA can rate over the params of the trials with a value, and a note on
    what it left out (``None`` if nothing)."""
    if len(complete) < 2:
        return [], f"{len(complete)} trial(s) with a value; importance needs at least 2"
    common = set.intersection(*(set(p) for p in complete))
    conditional = sorted(set.union(*(set(p) for p in complete)) - common)
    varying = sorted(n for n in common if len({repr(p[n]) for p in complete}) > 1)
    if not varying:
        return [], "no param varies across the trials with a value"
    # fANOVA needs every param in every trial; the branch choice (`optimizer.name`) is always
    # there and carries its branch's effect.
    note = "conditional params left out: " + ", ".join(conditional) if conditional else None
    return varying, note


def _sample(values: list[float], minimize: bool, size: int) -> list[int]:
    """The positions of the values fANOVA rates: all of them, or of more than ``size``, a
    seeded sample of ``size`` that holds the (first) best one, in their order."""
    if len(values) <= size:
        return list(range(len(values)))
    best = (min if minimize else max)(range(len(values)), key=values.__getitem__)
    rest = [i for i in range(len(values)) if i != best]
    return sorted([best, *random.Random(_IMPORTANCE_SEED).sample(rest, size - 1)])


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
    minimize = study.direction == optuna.study.StudyDirection.MINIMIZE
    picked = _sample([float(t.value) for t in complete], minimize, size)
    sample = optuna.create_study(direction=study.direction)
    sample.add_trials([complete[i] for i in picked])
    return sample


def view_sample(view: View, size: int = IMPORTANCE_SAMPLE) -> optuna.Study:
    """The study fANOVA rates in a view, as :func:`importance_sample` of its
    :func:`rung_study` picks it, built from the sampled trials alone."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trials = view.trials
    rated = view.rated()
    values = [value for i in rated if (value := view.values[i]) is not None]
    picked = [rated[i] for i in _sample(values, trials.mode == "min", size)]
    sample = optuna.create_study(direction="minimize" if trials.mode == "min" else "maximize")
    sample.add_trials(
        [
            optuna.trial.create_trial(
                value=view.values[i],
                params=trials.rows[i].params,
                distributions={n: trials.distributions[n] for n in trials.rows[i].params},
            )
            for i in picked
        ]
    )
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
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    params, note = _importance_params([t.params for t in complete])
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
    import plotly.graph_objects as go

    sweep = views[0].trials
    members = [i for i, curve in enumerate(sweep.curves) if curve]
    dense = len(members) > DENSE_TRIALS
    figure = go.Figure()
    for status in statuses(sweep.statuses):
        x: list[int | None] = []
        y: list[float | None] = []
        text: list[str | None] = []
        for i in members:
            row = sweep.rows[i]
            if row.status != status:
                continue
            steps = downsample_curve(sorted(sweep.curves[i].items()), sweep.mode)
            if x:  # a gap ends the previous trial's line
                x.append(None)
                y.append(None)
                text.append(None)
            x += [step for step, _ in steps]
            y += [rounded(value) for _, value in steps]
            text += [row.trial_id] * len(steps)
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
    last = max(max(sweep.curves[i]) for i in members)
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


def optimization_history(data: SweepData, trials: SweepTrials, metric: str, mode: str) -> Figure:
    """Every trial with a value in the order Tune created them, at its ranked value, coloured
    by status, and the best value so far (diverged trials, which the sweep ranks last, left
    out of it)."""
    import plotly.graph_objects as go

    values = _ranked_values(data, metric)
    figure = go.Figure()
    for status in statuses(trials.statuses):
        members = [
            (number, row.trial_id)
            for number, row in enumerate(trials.rows)
            if row.status == status and values.get(row.trial_id) is not None
        ]
        if members:
            figure.add_trace(
                go.Scatter(
                    x=[number for number, _ in members],
                    y=[values[trial_id] for _, trial_id in members],
                    text=[trial_id for _, trial_id in members],
                    mode="markers",
                    name=status,
                    marker={"color": STATUS_COLORS.get(status, OTHER_COLOR), "size": 9},
                    hovertemplate=f"trial %{{text}} ({status})<br>%{{y:.4g}}<extra></extra>",
                )
            )
    pick = min if mode == "min" else max
    best: list[float] = []
    numbers: list[int] = []
    for number, row in enumerate(trials.rows):
        value = values.get(row.trial_id)
        if value is not None and math.isfinite(value) and row.status != STATUS_DIVERGED:
            best.append(value if not best else pick(best[-1], value))
            numbers.append(number)
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
    its :func:`view_sample`), one bar trace whose data the buttons switch; a view without
    importances shows why. Of a dense sweep, the views other than the first are rated by a
    forest of ``_VIEW_TREES`` trees (the caption says so); views that rate the same values
    share one rating."""
    import plotly.graph_objects as go
    from optuna import visualization as vis

    dense = len(views[default].trials.rows) > DENSE_TRIALS
    rated: dict[tuple[Any, ...], dict[str, Any]] = {}

    def bars(index: int, view: View) -> tuple[dict[str, Any], dict[str, Any]]:
        trials = view.trials
        used = view.rated()
        params, note = _importance_params([trials.rows[i].params for i in used])
        trees = _VIEW_TREES if dense and index != default else _TREES
        restyle: dict[str, Any] = {"x": [[]], "y": [[]], "text": [[]], "hovertemplate": [[]]}
        if params:
            key = (tuple(used), tuple(view.values[i] for i in used), trees, view.axis)
            if key not in rated:
                drawn = vis.plot_param_importances(
                    view_sample(view),
                    evaluator=_evaluator(trees),
                    params=params,
                    target_name=view.axis,
                )
                (bar,) = drawn.data
                rated[key] = {k: [list(bar[k])] for k in ("x", "y", "text", "hovertemplate")}
            restyle = rated[key]
        caption = f"fANOVA over the {len(used)} trial(s) with a value"
        if len(used) > IMPORTANCE_SAMPLE:
            caption = (
                f"fANOVA over a seeded sample of {IMPORTANCE_SAMPLE} of the {len(used)} trials "
                "with a value"
            )
        if params and trees != _TREES:
            caption += f", a forest of {trees} trees"
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

    each = [bars(index, view) for index, view in enumerate(views)]
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
