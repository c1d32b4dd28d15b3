"""Trial comparison for a recorded sweep: tables, Optuna's figures and an HTML report.

The notebook ``notebooks/compare_trials.ipynb`` and ``sweeplab report`` draw the same views with
the same helpers. They take the :class:`~sweeplab.tracking.SweepData` that
``sweeplab.load_sweep`` returns, or the in-memory Optuna study that :func:`sweep_study` builds
from it, whose plotly figures come from ``optuna.visualization``. A multi-objective sweep also
gets its Pareto fronts and hypervolume against budget (:func:`pareto_figures`) and each
objective's views (:func:`objective_study`). pandas, Optuna and plotly load on first use, so
importing this package stays light.
"""

from __future__ import annotations

from sweeplab.report._figures import parameter_importance, sweep_figures
from sweeplab.report._html import write_report
from sweeplab.report._pareto import hypervolume_curve, pareto_figures
from sweeplab.report._space import read_space, space_distributions
from sweeplab.report._study import objective_study, sweep_study
from sweeplab.report._table import param_frame, ranked_table
from sweeplab.report._ui import DEFAULT_URI, mlflow_ui_command, runs_url, serve, sweep_experiments

__all__ = [
    "DEFAULT_URI",
    "hypervolume_curve",
    "mlflow_ui_command",
    "objective_study",
    "param_frame",
    "parameter_importance",
    "pareto_figures",
    "ranked_table",
    "read_space",
    "runs_url",
    "serve",
    "space_distributions",
    "sweep_experiments",
    "sweep_figures",
    "sweep_study",
    "write_report",
]
