"""The views of a multi-objective sweep: its Pareto front and its hypervolume against budget."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from sweeplab.pareto import dominates, hypervolume, point_of
from sweeplab.report._figures import _note_figure
from sweeplab.report._study import _records, sweep_study

if TYPE_CHECKING:
    import optuna
    import pandas as pd
    from plotly.graph_objects import Figure

    from sweeplab.tracking import SweepData

BUDGET_AXIS = "iterations spent (trials in the order they ended)"


def _check_several(data: SweepData) -> None:
    if len(data.objectives) < 2:
        raise ValueError(
            f"the sweep {data.name!r} has one objective ({data.metric!r}): it has no Pareto "
            "front; see `sweep_figures` for its views."
        )


def _end_order(data: SweepData) -> list[str]:
    """Trial ids in the order the trials ended: by their last reported point's timestamp
    (ties and trials without a point by trial id, the latter last)."""
    trial_ids = sorted(str(t) for t in data.trials["trial_id"]) if not data.trials.empty else []
    ended: dict[str, Any] = {}
    if not data.history.empty:
        ended = {str(k): v for k, v in data.history.groupby("trial_id")["timestamp"].max().items()}
    with_time = sorted((t for t in trial_ids if t in ended), key=lambda t: (ended[t], t))
    return with_time + [t for t in trial_ids if t not in ended]


def hypervolume_curve(data: SweepData) -> pd.DataFrame:
    """The hypervolume of a multi-objective sweep's feasible points as its trials ended.

    One row per trial, in the order the trials ended (the timestamp of their last reported
    metric): ``trial_id``, ``iterations`` (the iterations spent by every trial ended so far,
    this one included) and ``hypervolume`` (of the feasible points of those trials, with the
    summary's reference point, so the last row is ``data.summary.hypervolume``). Trials
    without a point, or infeasible, spend budget and add no volume. Empty when no trial has a
    point.

    Raises:
        ValueError: The sweep has one objective, or ``data`` has no ranked summary.
    """
    import pandas as pd

    _check_several(data)
    records = _records(data)
    summary = data.summary
    columns = ["trial_id", "iterations", "hypervolume"]
    if summary is None or summary.reference_point is None:
        return pd.DataFrame(columns=columns)
    objectives = data.objectives
    # The summary's reference point is in the objectives' own units; the arithmetic minimises.
    reference = tuple(o.signed(r) for o, r in zip(objectives, summary.reference_point, strict=True))
    front: list[tuple[float, ...]] = []  # the non-dominated feasible points so far
    volume, spent, rows = 0.0, 0, []
    for trial_id in _end_order(data):
        record = records.get(trial_id)
        if record is not None:
            spent += record.iterations
        if record is not None and record.has_point and record.violation <= 0:
            point = point_of(record.values or {}, objectives)
            if not any(dominates(p, point) or p == point for p in front):
                front = [p for p in front if not dominates(point, p)] + [point]
                volume = hypervolume(front, reference)
        rows.append({"trial_id": trial_id, "iterations": spent, "hypervolume": volume})
    return pd.DataFrame(rows, columns=columns)


def _hypervolume_figure(data: SweepData) -> Figure:
    import plotly.graph_objects as go

    curve = hypervolume_curve(data)
    title = "Hypervolume against budget"
    if curve.empty:
        return _note_figure(title, "no trial reported every objective")
    summary = data.summary
    assert summary is not None and summary.reference_point is not None
    reference = ", ".join(
        f"{o.name} {r:.4g}" for o, r in zip(data.objectives, summary.reference_point, strict=True)
    )
    figure = go.Figure(
        go.Scatter(
            x=list(curve["iterations"]),
            y=list(curve["hypervolume"]),
            customdata=list(curve["trial_id"]),
            mode="lines+markers",
            line_shape="hv",
            name="hypervolume",
            hovertemplate="trial %{customdata} ended<br>%{x} iterations<br>"
            "hypervolume %{y:.4g}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"{title} (reference point: {reference})",
        xaxis_title=BUDGET_AXIS,
        yaxis_title="hypervolume of the feasible front",
    )
    return figure


def _front_figure(
    study: optuna.Study, data: SweepData, first: int, second: int, picked: str | None
) -> Figure:
    import optuna
    import plotly.graph_objects as go
    from optuna import visualization as vis
    from optuna.trial import TrialState

    a, b = data.objectives[first], data.objectives[second]
    verbosity = optuna.logging.get_verbosity()
    # Without a feasible trial Optuna logs a warning; the plot (all grey) already says so.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        figure = vis.plot_pareto_front(
            study,
            targets=lambda t: (t.values[first], t.values[second]),
            target_names=[f"{a.name} ({a.mode})", f"{b.name} ({b.mode})"],
        )
    finally:
        optuna.logging.set_verbosity(verbosity)
    figure.update_layout(title=f"Pareto front: {a.name} vs {b.name}")
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if picked is not None and trial.user_attrs.get("trial_id") == picked:
            figure.add_trace(
                go.Scatter(
                    x=[trial.values[first]],
                    y=[trial.values[second]],
                    mode="markers",
                    marker={"symbol": "star", "size": 16, "color": "#f2b705", "line_width": 1},
                    name=f"picked: {picked}",
                    hovertemplate=f"picked trial {picked}<extra></extra>",
                )
            )
            figure.update_layout(legend={"x": 0, "y": 1.12, "orientation": "h"})
    return figure


def pareto_figures(data: SweepData, *, study: optuna.Study | None = None) -> dict[str, Figure]:
    """The views of a multi-objective sweep, by title.

    - ``pareto front: A vs B``: ``optuna.visualization.plot_pareto_front`` of the sweep's
      multi-objective study (:func:`sweep_study`), interactive, one per pair of objectives (one
      for two objectives, three for three). Red: the feasible front 1 over every objective
      (so with three objectives a front trial may look dominated in one pair's plane); blue:
      the other feasible trials; grey: the infeasible ones; a star: the picked trial.
    - ``hypervolume``: :func:`hypervolume_curve` against the iterations spent, one line.

    Each figure has a fixed number of traces, whatever the number of trials.

    Args:
        data: A multi-objective sweep (`sweeplab.load_sweep`).
        study: Its :func:`sweep_study`, when already built.

    Raises:
        ValueError: The sweep has one objective, or ``data`` has no ranked summary.
    """
    _check_several(data)
    study = study if study is not None else sweep_study(data)
    picked = data.summary.picked.trial_id if data.summary and data.summary.picked else None
    figures: dict[str, Figure] = {}
    complete = [t for t in study.trials if t.values is not None]
    for first, second in itertools.combinations(range(len(data.objectives)), 2):
        a, b = data.objectives[first].name, data.objectives[second].name
        title = f"pareto front: {a} vs {b}"
        if complete:
            figures[title] = _front_figure(study, data, first, second, picked)
        else:
            figures[title] = _note_figure(f"Pareto front: {a} vs {b}", "no trial with a point")
    figures["hypervolume"] = _hypervolume_figure(data)
    return figures
