"""sweeplab: hyperparameter sweeps of distributed Ray Train trainer groups, tracked in MLflow.

A spec file declares ``sweep = sweeplab.Sweep(...)`` with a search space, a plain Ray Train
training function and a tuning strategy; ``sweeplab sweep spec.py`` runs it. Heavy libraries
(ray, mlflow, torch) are imported only when a sweep runs or a sweep is loaded.
"""

from __future__ import annotations

from typing import Any

from sweeplab.errors import AddressError, ResourceError, SpecError, SweeplabError
from sweeplab.space import (
    OptunaSearcher,
    Space,
    choice,
    grid,
    load_space,
    loguniform,
    qloguniform,
    quniform,
    randint,
    uniform,
)
from sweeplab.spec import Sweep, load_spec
from sweeplab.strategies import PBT, SchedulerTraits

__version__ = "0.1.0"

__all__ = [
    "PBT",
    "AddressError",
    "OptunaSearcher",
    "ResourceError",
    "SchedulerTraits",
    "Space",
    "SpecError",
    "Sweep",
    "SweepCallback",
    "SweepOptions",
    "SweepOutcome",
    "SweeplabError",
    "TrialView",
    "best_trial",
    "choice",
    "grid",
    "list_sweeps",
    "load_space",
    "load_spec",
    "load_sweep",
    "loguniform",
    "qloguniform",
    "quniform",
    "randint",
    "run_sweep",
    "simulate",
    "uniform",
]

_LAZY = {
    "run_sweep": "sweeplab.engine",
    "simulate": "sweeplab.simulation",
    "SweepOptions": "sweeplab.engine",
    "SweepOutcome": "sweeplab.engine",
    "SweepCallback": "sweeplab.engine",
    "TrialView": "sweeplab.engine",
    "load_sweep": "sweeplab.tracking",
    "list_sweeps": "sweeplab.tracking",
    "best_trial": "sweeplab.tracking",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sweeplab' has no attribute {name!r}")
