"""Simulating a sweep's strategy against a learning curve, with no Ray runtime.

``sweeplab.simulate(sweep, curve, workers=4, seed=0)`` runs the searcher and the scheduler that
``sweeplab sweep`` builds for `sweep` against ``curve(config, iteration) -> (metrics,
seconds)``, on simulated workers and a simulated clock, and returns every trial's history::

    import sweeplab

    def curve(config, iteration):
        loss = (config["lr"] - 0.01) ** 2 + 1 / iteration
        return {"loss": loss}, 30.0  # the metrics, and the seconds the iteration took

    sim = sweeplab.simulate(sweep, curve, workers=4, seed=0)
    sim.best(), sim.iterations, sim.wall_s

Trials start no processes, so a thousand-trial sweep simulates in seconds: a strategy can be
tried on a model of one's curves before spending GPUs. FIFO, ASHA, median stopping and
HyperBand (a paused trial goes on from its next iteration when resumed) are simulated with
every searcher, and PBT as the loop's synchronous PBT (an exploited trial goes on along its
new config's curve); warm starts are refused. Ray Tune's library is imported, Ray itself is
never started.

A sweep with several metrics (``metric=["loss", "latency_ms"]``) is simulated the same way,
under FIFO or the multi-objective ASHA: the curve reports every metric, the divergence check
reads the first, and ``sim.points()`` gives each trial's point, the values of its last report
that holds every metric.
"""

from __future__ import annotations

from sweeplab.simulation._records import Report, SimulatedTrial, Simulation
from sweeplab.simulation._simulate import simulate

__all__ = ["Report", "SimulatedTrial", "Simulation", "simulate"]
