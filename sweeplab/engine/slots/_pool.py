"""The sweep driver's side of warm slots: start a sweep's slots, name them, close them."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from sweeplab.engine.slots._host import SlotHost

__all__ = ["WaitHook", "close_slots", "slot_name", "start_slots", "wait_until_ready"]

logger = logging.getLogger(__name__)

# How often a slot that cannot start yet looks for placement groups orphaned by an earlier
# sweep, and after how long it says what it waits for.
_REAP_EVERY_S = 5.0
_SAY_AFTER_S = 30.0

# Told ``(pending, total)`` while a sweep's slots wait to start.
WaitHook = Callable[[int, int], None]


def slot_name(prefix: str, index: int) -> str:
    """The Ray actor name of slot `index` of a sweep."""
    return f"{prefix}-slot-{index}"


def start_slots(
    *,
    names: tuple[str, ...],
    train_func: Callable[..., Any],
    num_workers: int | tuple[int, int],
    use_gpu: bool,
    resources_per_worker: Mapping[str, float],
    placement_strategy: str,
    storage: str,
    on_wait: WaitHook | None = None,
) -> list[Any]:
    """Starts one slot per name (their groups come up in the background); returns the actors.

    `on_wait` is told while they wait to start (see `wait_until_ready`).
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from sweeplab.raycompat import head_node_id

    host_cls = ray.remote(num_cpus=0, max_concurrency=64, max_restarts=0)(SlotHost)
    # A slot's host (and the Train controller that its `fit()` starts beside it) lives on the
    # head node: a lost worker node then costs the slot a group restart, not the slot. (The
    # driver's own node is not enough: a driver joins the raylet of its IP address, and on a
    # machine that runs several nodes, as the loopback tests do, that can be a worker node.)
    # The affinity is hard: a soft one placed one of three zero-CPU actors on the other node of
    # an idle loopback cluster, and a slot host there died with that node (the node-kill test
    # failed so). The host reserves no resources, so the head can always hold it; Train places
    # the slot's controller on the host's node by itself.
    here = NodeAffinitySchedulingStrategy(head_node_id(), soft=False)
    hosts = [
        host_cls.options(name=name, scheduling_strategy=here).remote(
            train_func=train_func,
            num_workers=num_workers,
            use_gpu=use_gpu,
            resources_per_worker=dict(resources_per_worker),
            placement_strategy=placement_strategy,
            storage=storage,
            name=name,
        )
        for name in names
    ]
    wait_until_ready(hosts, on_wait)
    return hosts


def wait_until_ready(hosts: list[Any], on_wait: WaitHook | None = None) -> None:
    """Waits until each slot's host has started.

    A host that reserves resources (an in-process slot's CPU) waits while something else holds
    them: another sweep on the same Ray, or a placement group orphaned by a killed sweep's slot
    or a lost node (see `sweeplab.engine._orphans`). Orphaned groups are removed every few
    seconds while the hosts wait, and after 30 s the wait is said in one warning line. Each few
    seconds `on_wait(pending, total)` is told how many hosts still wait (the sweep's stall
    watchdog looks at its clock). Whatever ends the wait early (`on_wait` raising, an
    interrupt, a host that failed) ends the hosts too: none is left waiting for resources.
    """
    import ray

    try:
        _wait(hosts, on_wait)
    except BaseException:
        for host in hosts:
            with contextlib.suppress(Exception):
                ray.kill(host)
        raise


def _wait(hosts: list[Any], on_wait: WaitHook | None) -> None:
    import ray

    from sweeplab.engine._orphans import remove_orphaned_groups

    pending = [h.ready.remote() for h in hosts]
    started, said = time.monotonic(), False
    while pending:
        ready, pending = ray.wait(pending, num_returns=len(pending), timeout=_REAP_EVERY_S)
        ray.get(ready)  # a host that failed to start raises here
        if not pending:
            return
        with contextlib.suppress(Exception):  # housekeeping never stops a sweep
            remove_orphaned_groups()
        if on_wait is not None:
            on_wait(len(pending), len(hosts))
        if not said and time.monotonic() - started > _SAY_AFTER_S:
            said = True
            logger.warning(
                "%d of %d trial slot(s) still wait for their resources after %.0f s; free now: "
                "%s (`sweeplab status` shows what holds them).",
                len(pending),
                len(hosts),
                time.monotonic() - started,
                ray.available_resources(),
            )


def close_slots(hosts: list[Any], timeout_s: float = 10.0) -> None:
    """Lets each slot's workers return and its group exit (`SlotHost.shut`, up to `timeout_s`),
    then ends the hosts."""
    import ray

    with contextlib.suppress(Exception):
        ray.wait(
            [h.shut.remote(timeout_s) for h in hosts],
            num_returns=len(hosts),
            timeout=timeout_s + 5,
        )
    for host in hosts:
        with contextlib.suppress(Exception):
            ray.kill(host)
