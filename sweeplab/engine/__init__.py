"""The sweep engine: resource planning, trial drivers (Ray Train groups) and the Tune run."""

from sweeplab.engine._plan import ResourcePlan, Rung, local_nodes, plan_resources, trial_plan
from sweeplab.engine._runner import SweepOptions, SweepOutcome, run_sweep

__all__ = [
    "ResourcePlan",
    "Rung",
    "SweepOptions",
    "SweepOutcome",
    "local_nodes",
    "plan_resources",
    "run_sweep",
    "trial_plan",
]
