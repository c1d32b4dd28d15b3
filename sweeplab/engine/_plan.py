"""Resource planning of a sweep, computed without starting anything.

A trial's trainer group asks Ray for its workers outside Tune's accounting, so Tune alone would
start more trials than the cluster can hold; their groups then wait, time out and retry without
end. The plan derives the concurrency from the cluster's nodes instead, and refuses a group that
can never fit.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence

from sweeplab.errors import ResourceError
from sweeplab.spec import Sweep
from sweeplab.strategies import total_trials as strategy_total_trials

__all__ = ["ResourcePlan", "local_nodes", "plan_resources"]


@dataclasses.dataclass(frozen=True)
class ResourcePlan:
    """What one trial needs and how many trials run at once."""

    worker: Mapping[str, float]
    workers: int
    max_workers: int
    concurrency: int
    cluster: Mapping[str, float]
    nodes: int
    total_trials: int

    @property
    def per_trial(self) -> dict[str, float]:
        return {k: v * self.workers for k, v in self.worker.items()}

    def describe_group(self) -> str:
        """One trial's trainer group in words: `2 worker(s) x {1 CPU}`."""
        worker = ", ".join(f"{v:g} {k}" for k, v in self.worker.items())
        workers = (
            f"{self.workers}-{self.max_workers} (elastic)"
            if self.workers != self.max_workers
            else str(self.workers)
        )
        return f"{workers} worker(s) x {{{worker}}}"


def local_nodes() -> list[dict[str, float]]:
    """The one node a local Ray would start with: this machine's CPUs and GPUs."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    node: dict[str, float] = {"CPU": float(cpus)}
    gpus = _local_gpu_count()
    if gpus:
        node["GPU"] = float(gpus)
    return [node]


def _local_gpu_count() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    try:
        return len([d for d in os.listdir("/dev") if d.startswith("nvidia") and d[6:].isdigit()])
    except OSError:
        return 0


def _groups_that_fit(
    nodes: Sequence[Mapping[str, float]],
    worker: Mapping[str, float],
    workers: int,
    strategy: str,
    limit: int,
) -> int:
    """How many trainer groups of `workers` x `worker` fit on `nodes` at once (at most `limit`)."""
    free = [dict(node) for node in nodes]

    def slots(node: Mapping[str, float]) -> int:
        counts = [
            math.floor(node.get(name, 0.0) / amount + 1e-9)
            for name, amount in worker.items()
            if amount > 0
        ]
        return min(counts) if counts else workers

    def take(node: dict[str, float], count: int) -> None:
        for name, amount in worker.items():
            node[name] = node.get(name, 0.0) - amount * count

    groups = 0
    while groups < limit:
        if strategy == "STRICT_PACK":
            host = next((n for n in free if slots(n) >= workers), None)
            if host is None:
                break
            take(host, workers)
        elif strategy == "STRICT_SPREAD":
            hosts = sorted((n for n in free if slots(n) >= 1), key=slots, reverse=True)
            if len(hosts) < workers:
                break
            for host in hosts[:workers]:
                take(host, 1)
        else:
            if sum(slots(n) for n in free) < workers:
                break
            remaining = workers
            for host in sorted(free, key=slots, reverse=True):
                count = min(slots(host), remaining)
                take(host, count)
                remaining -= count
                if not remaining:
                    break
        groups += 1
    return groups


def plan_resources(sweep: Sweep, nodes: Sequence[Mapping[str, float]]) -> ResourcePlan:
    """Plans the concurrency of `sweep` on a cluster of `nodes` (each a dict of its resources).

    Raises:
        ResourceError: If one trial's group can never fit, naming what it needs and what the
            cluster has.
    """
    worker = sweep.worker_resources
    total_trials = strategy_total_trials(sweep)
    strategy = sweep.placement_strategy
    cluster: dict[str, float] = {}
    for node in nodes:
        for name, amount in node.items():
            cluster[name] = cluster.get(name, 0.0) + amount
    if _groups_that_fit(nodes, worker, sweep.min_workers, strategy, 1) == 0:
        need = ", ".join(f"{v:g} {k}" for k, v in worker.items())
        have = ", ".join(f"{v:g} {k}" for k, v in sorted(cluster.items()) if k in worker) or "none"
        raise ResourceError(
            f"One trial needs {sweep.min_workers} worker(s) of {{{need}}} with placement "
            f"{strategy}, but the cluster ({len(nodes)} node(s): {have}) can never hold it. "
            "Lower `workers_per_trial` or the per-worker resources, or add nodes."
        )
    limit = min(total_trials, sweep.max_concurrent_trials or total_trials)
    concurrency = _groups_that_fit(nodes, worker, sweep.max_workers, strategy, limit)
    if concurrency == 0:
        concurrency = 1  # an elastic group starts below its maximum
    return ResourcePlan(
        worker=worker,
        workers=sweep.min_workers,
        max_workers=sweep.max_workers,
        concurrency=concurrency,
        cluster=cluster,
        nodes=len(nodes),
        total_trials=total_trials,
    )
