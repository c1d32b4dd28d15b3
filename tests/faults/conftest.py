"""Fixtures of the fault tests: a real 2-node Ray cluster on loopback (see loopback_cluster)."""

from loopback_cluster import two_node_cluster

__all__ = ["two_node_cluster"]
