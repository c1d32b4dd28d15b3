"""The report's and the notebook's figures: Optuna's plotly views of a sweep's study."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna
    import pandas as pd
    from plotly.graph_objects import Figure

# fANOVA fits a random forest: a fixed seed makes the importances, and the report, reproducible.
_IMPORTANCE_SEED = 0


def _evaluator() -> Any:
    from optuna.importance import FanovaImportanceEvaluator

    return FanovaImportanceEvaluator(seed=_IMPORTANCE_SEED)


def _importance_params(study: optuna.Study) -> tuple[list[str], str | None]:
    """The params fANOVA can rate, and a note on what it left out (``None`` if nothing)."""
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < 2:
        return [], f"{len(complete)} finished trial(s); importance needs at least 2"
    common = set.intersection(*(set(t.params) for t in complete))
    conditional = sorted(set.union(*(set(t.params) for t in complete)) - common)
    varying = sorted(p for p in common if len({repr(t.params[p]) for t in complete}) > 1)
    if not varying:
        return [], "no param varies across the finished trials"
    # fANOVA needs every param in every trial; the branch choice (`optimizer.name`) is always
    # there and carries its branch's effect.
    note = "conditional params left out: " + ", ".join(conditional) if conditional else None
    return varying, note


def parameter_importance(study: optuna.Study) -> pd.Series:
    """Each param's share of the objective's variance, by Optuna's fANOVA (seeded).

    Over the study's COMPLETE trials (see :func:`sweep_study`) and the params present in all of
    them that take more than one value; a conditional param is left out, the branch choice
    (``optimizer.name``) carries its branch's effect.

    Returns:
        Importances summing to 1, largest first, named ``importance``. Empty, with the reason
        in ``.attrs["note"]``, when fewer than 2 trials finished or no param varies; a note on
        the conditional params left out otherwise.
    """
    import optuna
    import pandas as pd

    params, note = _importance_params(study)
    result = pd.Series(dtype=float, name="importance")
    if params:
        importances = optuna.importance.get_param_importances(
            study, evaluator=_evaluator(), params=params
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


def sweep_figures(study: optuna.Study, *, metric: str = "Objective Value") -> dict[str, Figure]:
    """The views of a sweep's study, drawn by ``optuna.visualization``, by title.

    ``optimization history`` (COMPLETE trials, best so far), ``learning curves`` (intermediate
    values of every trial, stopped ones included), ``parallel coordinates`` (log axes for log
    distributions; a param of a branch a trial did not take sits on a separate mark),
    ``slice`` (each param against the objective, one panel per param, each with the trials
    that have it), ``parameter importance`` (fANOVA, seeded; its note when it cannot be
    computed). ``metric`` names the objective on the axes.
    """
    from optuna import visualization as vis
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    figures: dict[str, Figure] = {}
    # An empty plot says nothing; a note says why it is empty.
    if complete:
        figures["optimization history"] = vis.plot_optimization_history(study, target_name=metric)
    else:
        figures["optimization history"] = _note_figure(
            "Optimization History Plot", "no finished trial"
        )
    if any(t.intermediate_values for t in study.get_trials(deepcopy=False)):
        figures["learning curves"] = vis.plot_intermediate_values(study)
        figures["learning curves"].update_layout(yaxis_title=metric)
    else:
        figures["learning curves"] = _note_figure(
            "Intermediate Values Plot", f"no {metric} points recorded"
        )
    if any(t.params for t in complete):
        figures["parallel coordinates"] = vis.plot_parallel_coordinate(study, target_name=metric)
        figures["slice"] = vis.plot_slice(study, target_name=metric)
    else:
        empty = "no finished trial with params"
        figures["parallel coordinates"] = _note_figure("Parallel Coordinate Plot", empty)
        figures["slice"] = _note_figure("Slice Plot", empty)
    params, note = _importance_params(study)
    if params:
        figures["parameter importance"] = vis.plot_param_importances(
            study, evaluator=_evaluator(), params=params, target_name=metric
        )
    else:
        figures["parameter importance"] = _note_figure(
            "Hyperparameter Importances", note or "no importance computed"
        )
    return figures
