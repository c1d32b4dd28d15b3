"""Trial comparison for a recorded sweep: tables, plotly figures and an HTML report.

The notebook ``notebooks/compare_trials.ipynb`` and ``sweeplab report`` draw the same views with
the same helpers. They take the :class:`~sweeplab.tracking.SweepData` that
``sweeplab.load_sweep`` returns, or the in-memory Optuna studies built from it:
:func:`sweep_study`, and :func:`rung_study`, the sweep read at one rung (by default
:func:`default_rung`), or by each trial's best or last value. :func:`sweep_figures` draws every
trial, marked by status, with buttons that switch the rung inside the page. A multi-objective
sweep also gets its Pareto fronts and hypervolume against budget (:func:`pareto_figures`) and each
objective's views (:func:`objective_study`). :func:`compare_sweeps` (``sweeplab compare``)
sets sweeps, or the runs of one sweep, side by side: anytime curves, the budget each needed to
reach the others' best, their configs. pandas, Optuna and plotly load on first use, so
importing this package stays light.
"""

from __future__ import annotations

from sweeplab.report._compare import (
    ComparedSweep,
    Comparison,
    compare_sweeps,
    comparison_figures,
)
from sweeplab.report._compare_curves import anytime_curve, budget_tables
from sweeplab.report._compare_html import write_comparison
from sweeplab.report._figures import parameter_importance
from sweeplab.report._html import write_report
from sweeplab.report._pareto import hypervolume_curve, pareto_figures
from sweeplab.report._registry import sweep_figures
from sweeplab.report._rungs import default_rung, rung_study
from sweeplab.report._space import read_space, space_distributions
from sweeplab.report._study import objective_study, sweep_study
from sweeplab.report._table import param_frame, ranked_table
from sweeplab.report._ui import DEFAULT_URI, mlflow_ui_command, runs_url, serve, sweep_experiments

__all__ = [
    "DEFAULT_URI",
    "ComparedSweep",
    "Comparison",
    "anytime_curve",
    "budget_tables",
    "compare_sweeps",
    "comparison_figures",
    "default_rung",
    "hypervolume_curve",
    "mlflow_ui_command",
    "objective_study",
    "param_frame",
    "parameter_importance",
    "pareto_figures",
    "ranked_table",
    "read_space",
    "rung_study",
    "runs_url",
    "serve",
    "space_distributions",
    "sweep_experiments",
    "sweep_figures",
    "sweep_study",
    "write_comparison",
    "write_report",
]
