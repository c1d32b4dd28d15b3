"""The registry of a sweep's views: what each is called, what its caption says, how it is drawn.

The report draws each registered view once per objective, in the registry's order, as a section
with the view's anchor, title and caption (`sweeplab.report._html`); :func:`sweep_figures` draws
them for the notebook. A new view is its builder (in the module of its kind of figure) and one
`ReportView` entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from sweeplab.report._figures import (
    _note_figure,
    importance_figure,
    learning_curves,
    optimization_history,
)
from sweeplab.report._parallel import parallel_coordinates
from sweeplab.report._rungs import _check_rung
from sweeplab.report._study import _objective
from sweeplab.report._views import SweepTrials, View, slice_figure, sweep_views

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData


@dataclass(frozen=True)
class FigureInputs:
    """What a view's builder draws from, read once for every view of one objective.

    Attributes:
        data: The sweep (`sweeplab.load_sweep`).
        metric: The objective's name.
        mode: ``"min"`` or ``"max"``.
        views: The sweep read at each rung, by best value so far and by last value
            (:func:`sweep_views`); every trial in each.
        default: The index of the view shown first.
    """

    data: SweepData
    metric: str
    mode: str
    views: list[View]
    default: int

    @property
    def trials(self) -> SweepTrials:
        """The sweep's trials, the same in every view."""
        return self.views[self.default].trials


@dataclass(frozen=True)
class ReportView:
    """One view of a sweep: a figure of every trial, and the report's section that shows it.

    Attributes:
        key: Its name among :func:`sweep_figures`'s figures (``"parallel coordinates"``);
            capitalised, the title of the note that stands in for it in a sweep without trials.
        anchor: The id of its section in the report (a multi-objective report appends the
            objective's index).
        title: Its section's heading.
        caption: Its figure's caption, as HTML.
        builder: Draws it from the sweep; a sweep it cannot draw gets a note figure that says
            why. Called only for a sweep with at least one trial.
    """

    key: str
    anchor: str
    title: str
    caption: str
    builder: Callable[[FigureInputs], Figure]


def _learning_curves(inputs: FigureInputs) -> Figure:
    if any(inputs.trials.curves):
        return learning_curves(inputs.views, inputs.metric)
    return _note_figure("Learning curves", f"no {inputs.metric} points recorded")


def _has_params(inputs: FigureInputs) -> bool:
    return any(row.params for row in inputs.trials.rows)


def _parallel_coordinates(inputs: FigureInputs) -> Figure:
    if _has_params(inputs):
        return parallel_coordinates(inputs.views, inputs.default, inputs.mode)
    return _note_figure("Parallel coordinates", "no params")


def _slice(inputs: FigureInputs) -> Figure:
    if _has_params(inputs):
        return slice_figure(inputs.views, inputs.default)
    return _note_figure("Slice", "no params")


def _optimization_history(inputs: FigureInputs) -> Figure:
    return optimization_history(inputs.data, inputs.trials, inputs.metric, inputs.mode)


def _importance(inputs: FigureInputs) -> Figure:
    return importance_figure(inputs.views, inputs.default, inputs.metric)


_VIEWS = (
    ReportView(
        key="learning curves",
        anchor="learning-curves",
        title="Learning curves",
        caption="The metric at each reported step, one line per trial, every trial coloured by"
        " its status. Dotted lines: the rungs the views below can be read at.",
        builder=_learning_curves,
    ),
    ReportView(
        key="parallel coordinates",
        anchor="parallel-coordinates",
        title="Parallel coordinates",
        caption="Every trial is a line through its status, its value and its params. The"
        " buttons read the value at a rung (by default the highest step that enough trials"
        " reached), as the best value so far or as the last value. At a rung, a trial that"
        " ended before it is grey, at its last value. Log-scale params are on log axes; a"
        " param of a branch the trial did not take, or a trial without a value, sits on the"
        " <i>none</i> mark below its axis. Hover a line for its trial and values.",
        builder=_parallel_coordinates,
    ),
    ReportView(
        key="slice",
        anchor="slice",
        title="Slice",
        caption="Each param against the value of the view the buttons choose, over the trials"
        " that have it, coloured by status. An open marker: a trial that ended before the rung,"
        " at its last value.",
        builder=_slice,
    ),
    ReportView(
        key="optimization history",
        anchor="optimization-history",
        title="Optimisation history",
        caption="Every trial in the order Tune created them, at the value the sweep ranks it"
        " by, coloured by status, and the best value so far.",
        builder=_optimization_history,
    ),
    ReportView(
        key="parameter importance",
        anchor="importance",
        title="Parameter importance",
        caption="fANOVA (Optuna, seeded) over the trials with a value in the view the buttons"
        " choose: at a rung, the trials that reached it. Conditional params are left out; the"
        " branch choice carries their effect.",
        builder=_importance,
    ),
)

REPORT_VIEWS: Mapping[str, ReportView] = MappingProxyType({view.key: view for view in _VIEWS})
"""Every view of a sweep by its key, in the order the report shows them."""

# `sweep_figures` has always returned the optimisation history first (a notebook shows the
# figures in that order); the others follow in the report's order.
_FIRST = "optimization history"


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
    inputs = FigureInputs(data, name, mode, views, default)
    order = sorted(REPORT_VIEWS.values(), key=lambda view: view.key != _FIRST)
    if not inputs.trials.rows:
        return {view.key: _note_figure(view.key.capitalize(), "no trial") for view in order}
    return {view.key: view.builder(inputs) for view in order}
