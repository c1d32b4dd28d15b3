"""sweeplab's trial loop and the backends it runs trials on.

`TrialLoop` asks a search algorithm for trials, hands each result to a scheduler and applies
its decision (continue, pause, stop), as Ray Tune's controller does, so Tune's ``Searcher`` and
``TrialScheduler`` classes and sweeplab's own run in it unchanged; PBT (`LoopPBT`) exploits
through the loop. What trains a trial is a
`TrialBackend`: `sweeplab.simulate` runs the loop on a simulated clock against a learning
curve, and `sweeplab.engine.slot_loop` on warm slots of a Ray cluster (Ray Train groups).
"""

from __future__ import annotations

from sweeplab.loop._backend import BackendReport, TrialBackend
from sweeplab.loop._dicts import flatten_result, merge_suggestion
from sweeplab.loop._loop import LoopReport, TrialLoop
from sweeplab.loop._observer import LoopObserver
from sweeplab.loop._source import TrialSource
from sweeplab.loop._strategy import simulation_rule_break, sweep_loop
from sweeplab.loop._trial import (
    CONTINUE,
    PAUSE,
    PAUSED,
    PENDING,
    RUNNING,
    STOP,
    TERMINATED,
    LoopTrial,
)
from sweeplab.strategies import LoopPBT

__all__ = [
    "CONTINUE",
    "PAUSE",
    "PAUSED",
    "PENDING",
    "RUNNING",
    "STOP",
    "TERMINATED",
    "BackendReport",
    "LoopObserver",
    "LoopPBT",
    "LoopReport",
    "LoopTrial",
    "TrialBackend",
    "TrialLoop",
    "TrialSource",
    "flatten_result",
    "merge_suggestion",
    "simulation_rule_break",
    "sweep_loop",
]
