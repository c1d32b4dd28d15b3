"""The sweep engine: resource planning, trial drivers (Ray Train groups) and the Tune run."""

from sweeplab.engine._callbacks import SweepCallback, TrialView
from sweeplab.engine._plan import ResourcePlan, Rung, local_nodes, plan_resources, trial_plan
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._runner import SweepOptions, SweepOutcome, apply_options, run_sweep
from sweeplab.engine._session import start_local_ray
from sweeplab.engine._warm import WarmConfig, WarmStartPlan, plan_warm_start

__all__ = [
    "ResolvedSweep",
    "ResourcePlan",
    "Rung",
    "SweepCallback",
    "SweepOptions",
    "SweepOutcome",
    "TrialView",
    "WarmConfig",
    "WarmStartPlan",
    "apply_options",
    "local_nodes",
    "plan_resources",
    "plan_warm_start",
    "run_sweep",
    "start_local_ray",
    "trial_plan",
]
