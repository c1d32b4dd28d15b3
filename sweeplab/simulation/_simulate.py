"""`simulate`: a sweep's strategy run against a learning curve on a simulated clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweeplab.errors import SpecError
from sweeplab.loop import TrialLoop, sweep_loop
from sweeplab.pareto import Objective
from sweeplab.simulation._backend import Curve, SimulatedBackend
from sweeplab.simulation._records import Report, SimulatedTrial, Simulation

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
            (a configured PBT object, a warm start), or `curve` returns something other than
            ``(metrics, seconds)`` with each of the sweep's metrics.
    """
    if not callable(curve):
        raise SpecError(f"curve must be a function `curve(config, iteration)`, but got {curve!r}.")
    _check_count("workers", workers, allow_none=False)
    _check_count("budget_iterations", budget_iterations, allow_none=True)
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise SpecError(f"seed must be an integer or None, but got {seed!r}.")
        sweep = sweep.replace(seed=seed)
    objectives = sweep.objectives or (Objective(sweep.metric, sweep.mode),)
    loop = sweep_loop(
        sweep,
        SimulatedBackend(curve, objectives),
        workers=workers,
        budget_iterations=budget_iterations,
    )
    try:
        loop.run()
    finally:
        loop.close()
    return _simulation(loop)


def _simulation(loop: TrialLoop) -> Simulation:
    """What the loop's run leaves behind, as `Simulation` records."""
    reports = [Report(*report) for report in loop.reports]
    by_trial: dict[str, list[Report]] = {t.trial_id: [] for t in loop.trials}
    for report in reports:
        by_trial[report.trial_id].append(report)
    return Simulation(
        trials=[
            SimulatedTrial(
                trial_id=t.trial_id,
                config=t.decoded,
                reports=by_trial[t.trial_id],
                status=t.outcome,
                stopped_at=len(t.reports),
                exploits=tuple(t.exploits),
            )
            for t in loop.trials
        ],
        reports=reports,
        wall_s=reports[-1].time_s if reports else 0.0,
        iterations=len(reports),
        metric=loop.metric,
        mode=loop.mode,
        objectives=loop.objectives,
    )


def _check_count(name: str, value: object, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        rule = "an integer >= 1" + (" or None" if allow_none else "")
        raise SpecError(f"{name} must be {rule}, but got {value!r}.")
