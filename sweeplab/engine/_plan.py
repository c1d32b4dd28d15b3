"""Resource planning and the trial plan of a sweep, computed without starting anything.

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

__all__ = [
    "ResourcePlan",
    "Rung",
    "hyperband_brackets",
    "local_nodes",
    "plan_resources",
    "trial_plan",
]


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
    total_trials = sweep.num_trials * (sweep.space.grid_size if sweep.searcher == "grid" else 1)
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


@dataclasses.dataclass(frozen=True)
class Rung:
    """One step of a successive-halving schedule: trials reaching `iteration`."""

    bracket: int
    iteration: int
    trials: int


def trial_plan(sweep: Sweep, *, concurrency: int | None = None) -> tuple[list[Rung], int, str]:
    """The rungs of the sweep's schedule, its total budget in iterations, and a one-line summary.

    `concurrency` (trials at once, from `plan_resources`) only adds to the summary.
    """
    n, max_t = sweep.num_trials, sweep.max_iterations
    if sweep.searcher == "grid":
        n *= sweep.space.grid_size
    scheduler = sweep.scheduler if isinstance(sweep.scheduler, str) else "custom"
    rungs: list[Rung] = []
    if scheduler == "asha":
        eta, iteration, level = ASHA_REDUCTION_FACTOR, 1, 0
        while iteration < max_t:
            rungs.append(Rung(0, iteration, max(1, math.ceil(n / eta**level))))
            iteration *= eta
            level += 1
        rungs.append(Rung(0, max_t, max(1, math.ceil(n / eta**level))))
        budget = _budget(rungs)
        summary = f"ASHA: reduction factor {eta}, grace period 1, max {max_t} iterations"
    elif scheduler == "hyperband":
        brackets = hyperband_brackets(n, max_t, HYPERBAND_REDUCTION_FACTOR)
        rungs = [
            Rung(index, iteration, trials)
            for index, bracket in enumerate(brackets)
            for iteration, trials in bracket
        ]
        budget = _budget(rungs)
        stopped = n - sum(bracket[-1][1] for bracket in brackets)
        sizes = "/".join(str(bracket[0][1]) for bracket in brackets)
        summary = (
            f"HyperBand: {len(brackets)} bracket(s), {sizes} trials, reduction factor "
            f"{HYPERBAND_REDUCTION_FACTOR}, max {max_t}; stops {stopped} trial(s) early"
        ) + _compares_only_running(sweep, concurrency)
    elif scheduler == "pbt":
        interval = pbt_interval(max_t)
        budget = n * max_t
        caveat = _compares_only_running(sweep, concurrency)
        on = f", {concurrency} at a time" if concurrency is not None and not caveat else ""
        summary = (
            f"PBT: population {n}{on}, synchronous rounds every {interval} iteration(s), "
            f"bottom/top quantile 25%, {max_t} iterations each"
        ) + caveat
    elif scheduler == "median":
        budget = n * max_t
        summary = (
            f"Median stopping: after {median_grace(max_t)} iteration(s) a trial below the "
            f"median of the others stops; at most {max_t} iterations each"
        )
    else:
        budget = n * max_t
        summary = f"FIFO: every trial runs {max_t} iterations"
    return rungs, budget, summary


def _compares_only_running(sweep: Sweep, concurrency: int | None) -> str:
    """The caveat of a pausing scheduler whose trials cannot all be created up front.

    Only where a waiting trial holds no resources (warm slots, one-worker trials) can Tune
    create every trial at once; otherwise it creates no more than run at once, and the
    scheduler compares only those.
    """
    from sweeplab.engine._slots import waiting_trials_hold_nothing

    if concurrency is None or waiting_trials_hold_nothing(
        reuse_groups=sweep.reuse_groups, workers_per_trial=sweep.workers_per_trial
    ):
        return ""
    return f" (with a group per trial it compares only the {concurrency} trial(s) that run at once)"


def hyperband_brackets(num_trials: int, max_t: int, eta: int) -> list[list[tuple[int, int]]]:
    """The brackets Tune's synchronous HyperBand fills with `num_trials` trials.

    Each bracket is its rungs, ``(iteration, trials reaching it)``; the last rung's trials run
    to the bracket's end. Tune sizes a bracket from `max_t` alone and fills brackets in the
    order trials are created, the one with the fewest halvings first; a bracket whose first
    rung would be iteration 0 is skipped, and a full band of brackets starts the next band.
    A halving keeps ``ceil(capacity / eta)`` of the bracket's trials, so a bracket that is not
    full may keep all of them.
    """
    bands = round(math.log(max_t) / math.log(eta)) + 1 if max_t > 1 else 1
    brackets: list[list[tuple[int, int]]] = []
    left, s = num_trials, 0
    while left > 0:
        first = int(max_t * eta ** (-s))
        if first > 0:
            capacity = math.ceil(bands / (s + 1) * eta**s)
            trials = min(capacity, left)
            left -= trials
            rungs, iteration = [(first, trials)], first
            for _ in range(s):
                capacity = math.ceil(capacity / eta)
                iteration = min(iteration * eta, max_t)
                rungs.append((iteration, min(trials, capacity)))
            brackets.append(rungs)
        s = (s + 1) % bands
    return brackets


def _budget(rungs: Sequence[Rung]) -> int:
    """Iterations spent if each rung's survivors run from the previous rung to this one."""
    total = 0
    previous: dict[int, int] = {}
    for rung in rungs:
        start = previous.get(rung.bracket, 0)
        total += rung.trials * (rung.iteration - start)
        previous[rung.bracket] = rung.iteration
    return total


ASHA_REDUCTION_FACTOR = 3
HYPERBAND_REDUCTION_FACTOR = 3


def pbt_interval(max_iterations: int) -> int:
    return max(1, max_iterations // 4)


def median_grace(max_iterations: int) -> int:
    return max(1, max_iterations // 4)
