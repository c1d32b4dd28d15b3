"""Ray Core state: placement groups with their creators, free resources per node, the head."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "PlacementGroupRecord",
    "free_resources_per_node",
    "head_node_id",
    "placement_groups_with_creators",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray._private.state",
        "state._connect_and_get_accessor",
        (),
        "the GCS placement-group table with each group's creator; the public "
        "`placement_group_table()` and `ray.util.state` omit the creating actor",
        purpose="essential",
        feature="orphaned placement groups removed",
    ),
    PrivateUse(
        "ray._raylet",
        "GlobalStateAccessor.get_placement_group_table",
        (),
        "the raw table rows",
        purpose="essential",
        feature="orphaned placement groups removed",
    ),
    PrivateUse(
        "ray.core.generated.gcs_pb2",
        "PlacementGroupTableData.FromString",
        (),
        "decodes a row: a trainer group whose creating Train controller died with its node is "
        "an orphan holding CPUs",
        purpose="essential",
        feature="orphaned placement groups removed",
    ),
    *(
        PrivateUse(
            "ray.core.generated.gcs_pb2",
            f"PlacementGroupTableData.{field}",
            None,
            "a field of that row",
            purpose="essential",
            feature="orphaned placement groups removed",
        )
        for field in (
            "placement_group_id",
            "creator_actor_id",
            "creator_actor_dead",
            "is_detached",
            "state",
            "REMOVED",
        )
    ),
    PrivateUse(
        "ray._private.state",
        "available_resources_per_node",
        (),
        "free resources of each node for `sweeplab status`; public Ray has cluster-wide "
        "`ray.available_resources()` only (Ray's own tooling uses this)",
        purpose="essential",
        feature="each node's free resources in `sweeplab status`",
    ),
    PrivateUse(
        "ray._common.constants",
        "HEAD_NODE_RESOURCE_NAME",
        None,
        "the resource only the head node has, to find the head for the slots' hosts; "
        "`ray.nodes()` does not say which node is the head, and `ray.util.state` needs the "
        "dashboard",
        purpose="essential",
        feature="warm trial slots' hosts on the head node",
    ),
)


@dataclasses.dataclass(frozen=True)
class PlacementGroupRecord:
    """A placement group and who created it, as the GCS knows it."""

    placement_group_id: bytes
    creator_actor_id: bytes
    creator_actor_dead: bool
    is_detached: bool
    removed: bool


def placement_groups_with_creators() -> list[PlacementGroupRecord]:
    """Every placement group of the connected cluster, with its creating actor."""
    from ray._private.state import state
    from ray.core.generated import gcs_pb2

    table_data = gcs_pb2.PlacementGroupTableData
    records = []
    for raw in state._connect_and_get_accessor().get_placement_group_table():
        info = table_data.FromString(raw)
        records.append(
            PlacementGroupRecord(
                placement_group_id=info.placement_group_id,
                creator_actor_id=info.creator_actor_id,
                creator_actor_dead=info.creator_actor_dead,
                is_detached=info.is_detached,
                removed=info.state == table_data.REMOVED,
            )
        )
    return records


def free_resources_per_node() -> dict[str, Mapping[str, float]]:
    """The free resources of each live node of the connected cluster, by node id (hex)."""
    from ray._private.state import available_resources_per_node

    return available_resources_per_node()


def head_node_id() -> str:
    """The head node's id, or the driver's node where no live node says it is the head."""
    import ray
    from ray._common.constants import HEAD_NODE_RESOURCE_NAME

    for node in ray.nodes():
        if node.get("Alive") and HEAD_NODE_RESOURCE_NAME in node.get("Resources", {}):
            return str(node["NodeID"])
    return str(ray.get_runtime_context().get_node_id())
