"""Removes the placement groups of trainer groups whose Train controller died.

Ray keeps a non-detached placement group until both its creating actor and its job are dead.
A trial's group is created by its Train controller, and Train's placement-group cleaner usually
removes it when the controller dies; but when the node that ran both is lost, nothing does. The
sweep's job lives on, so the group's placement group stays, Ray moves its lost bundles onto the
surviving nodes, and the restarted trial's new group waits forever for the CPUs they hold. (A
warm slot's host, and so its controller, lives on the head node, which makes this rare on the
trial loop; it is how orphans came about on Tune's controller.)

The same happens to a warm slot's group when the slot's host is killed (at the end of a sweep,
or with a killed driver) while its controller is restarting the group: the controller dies with
its owner, and Ray's placement-group table still says its creator is alive (seen on Ray 2.60:
the actor was DEAD, "its owner has died", its group CREATED and idle). On a Ray that outlives
the sweep (`--address`, or the search benchmark's one Ray for all sweeps) the next sweep's slot
then waits forever for the CPU it holds. So a creator the table calls alive is also looked up
in Ray's state API.
"""

from __future__ import annotations

import logging
import time

__all__ = ["OrphanGroupReaper", "remove_orphaned_groups"]

logger = logging.getLogger(__name__)


def remove_orphaned_groups() -> int:
    """Removes placement groups whose creating actor is dead; returns how many."""
    import ray
    from ray.util.placement_group import PlacementGroup, remove_placement_group

    from sweeplab.raycompat import placement_groups_with_creators

    removed = 0
    for info in placement_groups_with_creators():
        # Tune's own groups are created by the driver process, not by an actor.
        created_by_actor = not ray.ActorID(info.creator_actor_id).is_nil()
        if info.is_detached or not created_by_actor or info.removed:
            continue
        if not info.creator_actor_dead and not _actor_is_dead(info.creator_actor_id.hex()):
            continue
        remove_placement_group(PlacementGroup(ray.PlacementGroupID(info.placement_group_id)))
        removed += 1
    if removed:
        logger.warning(
            "Removed %d placement group(s) of trainer groups whose creator died.", removed
        )
    return removed


def _actor_is_dead(actor_id: str) -> bool:
    """Whether Ray's state API reports the actor DEAD (False when it cannot tell)."""
    from ray.util.state import get_actor

    try:
        state = get_actor(actor_id, timeout=5)
    except Exception:  # the state API needs the dashboard (`ray[default]`); without it, keep
        return False
    return state is not None and state.state == "DEAD"


class OrphanGroupReaper:
    """Removes orphaned groups for the sweep: when a trial fails, and every `interval_s`."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self.interval_s = interval_s
        self._last = 0.0

    def reap(self) -> None:
        """Looks for orphaned groups now (a trial failed or is retried)."""
        self._last = time.monotonic()
        try:
            remove_orphaned_groups()
        except Exception:  # never let housekeeping stop a sweep
            logger.exception("Could not look for orphaned placement groups.")

    def tick(self) -> None:
        """Looks for orphaned groups if `interval_s` has passed: a group can be orphaned after
        its trial restarted (a node's death is noticed late)."""
        if time.monotonic() - self._last >= self.interval_s:
            self.reap()
