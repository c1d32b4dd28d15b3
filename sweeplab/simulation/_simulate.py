"""`simulate`: a sweep's strategy run against a learning curve on a simulated clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweeplab.errors import SpecError
from sweeplab.simulation._loop import Curve, SimulatedController
from sweeplab.simulation._records import Simulation
from sweeplab.simulation._strategy import (
    AlgorithmSource,
    simulated_max_pending,
    simulated_scheduler,
    simulated_source,
    simulation_rule_break,
)

if TYPE_CHECKING:
    from sweeplab.spec import Sweep

__all__ = ["simulate"]


def simulate(
    sweep: Sweep,
    curve: Curve,
    *,
    workers: int = 4,
    seed: int | None = None,
    budget_iterations: int | None = None,
) -> Simulation:
    """Runs the sweep's searcher and scheduler against `curve`, with no Ray runtime.

    The searcher and the scheduler are the objects ``sweeplab sweep`` builds for `sweep`; each
    trial "trains" by calling `curve` once per iteration, on `workers` simulated workers and a
    simulated clock. Results arrive in simulated-time order, and the scheduler stops trials and
    the searcher learns from them as under Ray Tune. The sweep's training function is not
    called, and its resources, ``max_concurrent_trials`` and ``time_budget_s`` are not read.

    A configured searcher or scheduler object (not a name) is used as given, as the engine uses
    it: it keeps its state from one call to the next, so pass a fresh one to each.

    Args:
        sweep: The sweep whose strategy to simulate.
        curve: ``curve(config, iteration) -> (metrics, seconds)``: the metrics of that
            iteration (1-based) of a trial with `config` (the config its training function
            would get) and the simulated seconds it took. The metrics hold every one of the
            sweep's metrics (each objective of a multi-objective sweep). It must be
            deterministic for the simulation to be.
        workers: Trials that train at once.
        seed: The searcher's seed, instead of the sweep's; None: the sweep's ``seed``.
        budget_iterations: Iterations in all after which the sweep stops: no new trial starts,
            and the running trials stop at their last report. None: the sweep's trials run as
            the scheduler lets them.

    Returns:
        Every trial and every report, with the simulated time.

    Raises:
        SpecError: If an argument breaks its rule, or the sweep's strategy cannot be simulated
            (PBT, a warm start), or `curve`
            returns something other than ``(metrics, seconds)`` with each of the sweep's
            metrics.
    """
    from sweeplab.space import decode_config

    if not callable(curve):
        raise SpecError(f"curve must be a function `curve(config, iteration)`, but got {curve!r}.")
    _check_count("workers", workers, allow_none=False)
    _check_count("budget_iterations", budget_iterations, allow_none=True)
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise SpecError(f"seed must be an integer or None, but got {seed!r}.")
        sweep = sweep.replace(seed=seed)
    broken = simulation_rule_break(sweep)
    if broken is not None:
        raise broken.error()
    space = sweep.space
    scheduler = simulated_scheduler(sweep, workers=workers)
    source = simulated_source(sweep, workers=workers)
    try:
        return SimulatedController(
            scheduler=scheduler,
            source=source,
            curve=curve,
            decode=lambda config: decode_config(space, config),
            metric=sweep.metric,
            mode=sweep.mode,
            objectives=sweep.objectives,
            max_iterations=sweep.max_iterations,
            workers=workers,
            budget_iterations=budget_iterations,
            max_pending=simulated_max_pending(sweep, source),
        ).run()
    finally:
        if isinstance(source, AlgorithmSource):
            source.close()


def _check_count(name: str, value: object, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        rule = "an integer >= 1" + (" or None" if allow_none else "")
        raise SpecError(f"{name} must be {rule}, but got {value!r}.")
