"""Removes the placement groups of trainer groups whose Train controller died with its node.

Ray keeps a non-detached placement group until both its creating actor and its job are dead.
A trial's group is created by its Train controller, and Train's placement-group cleaner usually
removes it when the controller dies; but when a node is lost, the controller and the cleaner can
both have lived there. The sweep's job lives on, so the group's placement group stays, Ray moves
its lost bundles onto the surviving nodes, and the restarted trial's new group waits forever for
the CPUs they hold. The sweep driver removes such orphans.
"""

from __future__ import annotations

import logging
import time
from typing import Any

__all__ = ["OrphanGroupReaper", "remove_orphaned_groups"]

logger = logging.getLogger(__name__)


def remove_orphaned_groups() -> int:
    """Removes placement groups whose creating actor is dead; returns how many."""
    import ray
    from ray.util.placement_group import PlacementGroup, remove_placement_group

    from sweeplab.engine._ray_compat import placement_groups_with_creators

    removed = 0
    for info in placement_groups_with_creators():
        # Tune's own groups are created by the driver process, not by an actor.
        created_by_actor = not ray.ActorID(info.creator_actor_id).is_nil()
        if info.is_detached or not created_by_actor or not info.creator_actor_dead or info.removed:
            continue
        remove_placement_group(PlacementGroup(ray.PlacementGroupID(info.placement_group_id)))
        removed += 1
    if removed:
        logger.warning("Removed %d placement group(s) of trainer groups lost with a node.", removed)
    return removed


class OrphanGroupReaper:
    """A sink of the sweep's Tune callbacks that removes orphaned groups when trials fail."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self.interval_s = interval_s
        self._last = 0.0

    def _reap(self) -> None:
        self._last = time.monotonic()
        try:
            remove_orphaned_groups()
        except Exception:  # never let housekeeping stop a sweep
            logger.exception("Could not look for orphaned placement groups.")

    def on_trial_recover(self, *args: Any, **kwargs: Any) -> None:
        self._reap()

    def on_trial_error(self, *args: Any, **kwargs: Any) -> None:
        self._reap()

    def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
        # A group can be orphaned after its trial restarted (the node's death is noticed late).
        if time.monotonic() - self._last >= self.interval_s:
            self._reap()
