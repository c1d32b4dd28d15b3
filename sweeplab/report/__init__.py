"""Trial comparison for a recorded sweep: figures and tables for notebooks, and an HTML report.

The notebook ``notebooks/compare_trials.ipynb`` and ``sweeplab report`` draw the same views with
the same helpers, each taking the :class:`~sweeplab.tracking.SweepData` that
``sweeplab.load_sweep`` returns. matplotlib, pandas and Optuna load on first use, so importing
this package stays light.
"""

from __future__ import annotations

from sweeplab.report._figures import importance_figure, learning_curves, parallel_coordinates
from sweeplab.report._html import write_report
from sweeplab.report._importance import parameter_importance
from sweeplab.report._table import param_frame, ranked_table

__all__ = [
    "importance_figure",
    "learning_curves",
    "parallel_coordinates",
    "param_frame",
    "parameter_importance",
    "ranked_table",
    "write_report",
]
