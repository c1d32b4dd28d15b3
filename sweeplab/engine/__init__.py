"""The sweep engine: resource planning, trainer groups (Ray Train) and the trial loop's run."""

from sweeplab.engine._address import check_address
from sweeplab.engine._callbacks import SweepCallback, TrialView
from sweeplab.engine._display import make_console
from sweeplab.engine._plan import ResourcePlan, local_nodes, plan_resources
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._runner import (
    SweepOptions,
    SweepOutcome,
    apply_options,
    check_runnable,
    run_sweep,
)
from sweeplab.engine._session import DEFAULT_STORAGE, start_local_ray
from sweeplab.engine._slot_backend import SlotBackend, slot_loop
from sweeplab.engine._stall import SweepStalled
from sweeplab.engine._trial_mode import TrialMode
from sweeplab.engine._warm import WarmConfig, WarmStartPlan, plan_warm_start
from sweeplab.strategies import Rung, trial_plan

__all__ = [
    "DEFAULT_STORAGE",
    "ResolvedSweep",
    "ResourcePlan",
    "Rung",
    "SlotBackend",
    "SweepCallback",
    "SweepOptions",
    "SweepOutcome",
    "SweepStalled",
    "TrialMode",
    "TrialView",
    "WarmConfig",
    "WarmStartPlan",
    "apply_options",
    "check_address",
    "check_runnable",
    "local_nodes",
    "make_console",
    "plan_resources",
    "plan_warm_start",
    "run_sweep",
    "slot_loop",
    "start_local_ray",
    "trial_plan",
]
