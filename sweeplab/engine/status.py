"""`sweeplab status`: a cluster's nodes and free resources beside what one trial needs.

Without an address nothing starts: the table shows the node a local Ray would start with. With
an address the command joins the cluster as a driver (token authentication as configured for
`ray start`), reads each node's total and free resources, and leaves again.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sweeplab.errors import ResourceError, SweeplabError

__all__ = ["NodeStatus", "cluster_status", "print_status"]

EXIT_OK, EXIT_USAGE = 0, 2
# Ray's bookkeeping resources, not something a trial asks for.
_HIDDEN_PREFIXES = ("node:", "accelerator_type:")
_HIDDEN = {"memory", "object_store_memory"}


@dataclasses.dataclass(frozen=True)
class NodeStatus:
    """One node: its id and address, and its resources in total and free (None: unknown)."""

    node_id: str
    address: str
    total: Mapping[str, float]
    free: Mapping[str, float] | None


def _visible(resources: Mapping[str, float]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in resources.items()
        if k not in _HIDDEN and not k.startswith(_HIDDEN_PREFIXES)
    }


def cluster_status(address: str) -> list[NodeStatus]:
    """The alive nodes of the Ray cluster at `address`, with their total and free resources.

    Raises:
        SweeplabError: No cluster answers at `address`.
    """
    import ray

    from sweeplab.engine._address import check_address

    check_address(address)
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            configure_logging=True,
            logging_level=logging.ERROR,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SweeplabError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
    try:
        free_by_node: dict[str, Mapping[str, float]] | None
        try:
            from sweeplab.raycompat import free_resources_per_node

            free_by_node = free_resources_per_node()
        except Exception:  # a private API: the table then shows totals only
            free_by_node = None
        nodes = []
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            node_id = node["NodeID"]
            free = None
            if free_by_node is not None:
                free = _visible(free_by_node.get(node_id, {}))
            nodes.append(
                NodeStatus(
                    node_id=node_id,
                    address=str(node.get("NodeManagerAddress", "?")),
                    total=_visible(node.get("Resources", {})),
                    free=free,
                )
            )
        return nodes
    finally:
        ray.shutdown()


def _local_status() -> list[NodeStatus]:
    from sweeplab.engine._plan import local_nodes

    return [
        NodeStatus(node_id="(local)", address="this machine", total=node, free=None)
        for node in local_nodes()
    ]


def _amount(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _nodes_table(nodes: Sequence[NodeStatus], title: str) -> Any:
    from rich.table import Table

    names = sorted({name for node in nodes for name in node.total})
    names.sort(key=lambda name: (name not in ("CPU", "GPU"), name))
    table = Table(title=title, header_style="bold")
    table.add_column("node")
    table.add_column("address")
    for name in names:
        table.add_column(f"{name} free/total", justify="right")
    for node in nodes:
        cells = []
        for name in names:
            total = node.total.get(name)
            if total is None:
                cells.append("-")
                continue
            free = None if node.free is None else node.free.get(name, 0.0)
            cells.append(f"{_amount(free)}/{_amount(total)}")
        table.add_row(node.node_id[:12], node.address, *cells)
    return table


def print_status(*, spec: Path | None, address: str | None) -> int:
    """Prints the cluster's nodes and, with a spec, what one trial needs and the concurrency.

    Returns:
        0, or 2 when a trial of the spec can never fit the cluster (the message says why).

    Raises:
        SweeplabError: A bad spec (`SpecError`) or no cluster at `address`.
    """
    from sweeplab.engine._display import make_console
    from sweeplab.engine._plan import plan_resources
    from sweeplab.engine._resolved import ResolvedSweep
    from sweeplab.spec import load_spec

    sweep = load_spec(spec) if spec is not None else None  # fails before connecting anywhere
    console = make_console()
    if address is None:
        nodes = _local_status()
        title = "this machine (a local Ray would start with these; nothing started)"
    else:
        nodes = cluster_status(address)
        title = f"Ray cluster at {address}: {len(nodes)} node(s)"
    console.print(_nodes_table(nodes, title))
    if sweep is None:
        return EXIT_OK
    try:
        plan = plan_resources(sweep, [dict(node.total) for node in nodes])
    except ResourceError as exc:
        print(f"sweeplab: error: {spec}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    console.print(
        f"[bold]one trial[/bold] of {sweep.name}: {plan.describe_group()}, "
        f"placement {sweep.placement_strategy}"
    )
    console.print(
        f"[bold]concurrency[/bold]: {plan.concurrency} trial(s) at once "
        f"({plan.total_trials} in all, {plan.nodes} node(s))"
    )
    groups = ResolvedSweep.trial_mode_of(sweep).describe(
        workers_per_trial=sweep.workers_per_trial, concurrency=plan.concurrency
    )
    console.print(f"[bold]trainer groups[/bold]: {groups}")
    return EXIT_OK
