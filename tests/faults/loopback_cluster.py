"""A real 2-node Ray cluster on loopback for the fault tests (see benchmarks/_loopback.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from benchmarks._loopback import RayNode, alive_nodes, loopback_cluster


@dataclasses.dataclass
class Cluster:
    address: str
    head: RayNode
    worker: RayNode
    env: dict[str, str]

    def alive_nodes(self) -> int:
        return alive_nodes(self.address, self.env)


@pytest.fixture(scope="module")
def two_node_cluster() -> Iterator[Cluster]:
    """Head (resource `node_a`) and worker (`node_b`), 2 CPUs each, on 127.0.0.1.

    Token authentication stays on, as Ray configures it for local clusters, with a token file of
    the cluster's own; the sweep subprocess authenticates with the same file.
    """
    with loopback_cluster(2, 2, node_resources=("node_a", "node_b")) as cluster:
        head, worker = cluster.nodes
        yield Cluster(address=cluster.address, head=head, worker=worker, env=cluster.env)
