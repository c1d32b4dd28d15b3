"""Tune's trial actors: idle ones kept for paused trials, starting ones left to start.

Both only save time: Tune would otherwise stop an actor that a paused trial could have resumed
into, and kill an actor that was starting for its trial.
"""

from __future__ import annotations

import functools
from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "keep_idle_trial_actors",
    "let_starting_trial_actors_start",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._actor_cache",
        None,
        "the trial actors Tune keeps for reuse, replaced by a cache that keeps as many idle "
        "actors as trials run at once; Tune keeps one when no trial waits for an actor, and no "
        "setting changes that",
        purpose="speed",
        feature="idle trial actors kept for paused trials",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._maybe_reuse_cached_actor",
        ("trial",),
        "gives a waiting trial a cached actor and kills the actor already starting for it; "
        "wrapped so that a starting actor is left to start (no setting turns the kill off)",
        purpose="speed",
        feature="starting trial actors left to start",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trial_to_actor",
        None,
        "the actor Tune requested for a trial, read to learn whether one is starting for it",
        purpose="speed",
        feature="starting trial actors left to start; ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._started_actors",
        None,
        "the actors that finished starting; an actor with resources that is not here is starting",
        purpose="speed",
        feature="starting trial actors left to start",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._resetting_trials",
        None,
        "trials whose reused actor is being reset: Tune's own rule is kept for them",
        purpose="speed",
        feature="starting trial actors left to start",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._actor_manager",
        None,
        "Tune's actor manager, which knows whether an actor has its resources",
        purpose="speed",
        feature="starting trial actors left to start",
    ),
    PrivateUse(
        "ray.air.execution._internal.actor_manager",
        "RayActorManager.is_actor_started",
        ("tracked_actor",),
        "true once an actor has its resources and its process is asked to start it",
        purpose="speed",
        feature="starting trial actors left to start",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TrialRunnerWrapper._tune_controller",
        None,
        "the controller behind the wrapper that Tune hands a scheduler, whose actor cache that is",
        purpose="speed",
        feature="idle trial actors kept for paused trials",
    ),
    PrivateUse(
        "ray.tune.utils.object_cache",
        "_ObjectCache",
        (),
        "that cache's class, subclassed: `cache_object` and `flush_cached_objects` decide what "
        "is kept",
        purpose="speed",
        feature="idle trial actors kept for paused trials",
    ),
    PrivateUse(
        "ray.tune.utils.object_cache",
        "_ObjectCache.cache_object",
        ("key", "obj"),
        "called by Tune when a trial pauses or ends, with the trial's resources as the key",
        purpose="speed",
        feature="idle trial actors kept for paused trials",
    ),
    PrivateUse(
        "ray.tune.utils.object_cache",
        "_ObjectCache.flush_cached_objects",
        ("force_all",),
        "called by Tune after every step, and with `force_all` when the experiment ends",
        purpose="speed",
        feature="idle trial actors kept for paused trials",
    ),
)


@functools.cache
def _keep_up_to_cache() -> type:
    """Tune's actor cache, keeping up to `keep` objects that no waiting trial asked for."""
    from ray.tune.utils.object_cache import _ObjectCache

    class KeepUpTo(_ObjectCache):
        def __init__(self, keep: int) -> None:
            super().__init__(may_keep_one=True)
            self.keep = keep

        def cache_object(self, key: Any, obj: Any) -> bool:
            wanted = len(self._cached_objects[key]) < self._max_num_objects[key]
            if not wanted and self._num_cached_objects >= self.keep:
                return False
            self._cached_objects[key].append(obj)
            self._num_cached_objects += 1
            return True

        def flush_cached_objects(self, force_all: bool = False) -> Any:
            if force_all:
                yield from super().flush_cached_objects(force_all=True)
                return
            for key, objs in self._cached_objects.items():
                wanted = self._max_num_objects[key]
                while len(objs) > wanted and self._num_cached_objects > self.keep:
                    self._num_cached_objects -= 1
                    yield objs.pop(0)

    return KeepUpTo


def keep_idle_trial_actors(tune_controller: Any, up_to: int) -> None:
    """Lets Tune keep up to `up_to` idle trial actors for paused trials to resume into.

    Tune keeps a stopping trial's actor only for a trial that waits for one, or a single actor
    when none waits. Where trials pause together (a PBT round's end, a HyperBand rung), a
    second pause before the first resume stopped its actor, and the next resume started a new
    process: a second or more, the trials one at a time meanwhile. `tune_controller` is what
    Tune hands a scheduler (its wrapper of the controller). Idempotent and cheap once done: a
    scheduler calls it at every step.
    """
    controller = getattr(tune_controller, "_tune_controller", tune_controller)
    cache = controller._actor_cache
    keep = max(1, up_to)
    if getattr(cache, "keep", None) == keep:
        return
    replacement = _keep_up_to_cache()(keep)
    replacement.__dict__.update(
        {k: v for k, v in vars(cache).items() if k not in ("keep", "_may_keep_one")}
    )
    controller._actor_cache = replacement


@functools.cache
def let_starting_trial_actors_start() -> None:
    """Tune no longer kills a trial actor that is starting to give its trial a cached one.

    When a trial ends and its actor is cached for reuse, Tune hands it to the next waiting
    trial, and if that trial's own actor already has its resources and is starting, Tune
    kills it. Where an actor takes longer to start than the gap between two trial ends (many
    slots, short trials, or a busy node), every new actor is killed before it is ready: on the
    loopback cluster of `benchmarks.scale_out`, 11 of 32 slots ever ran trials. With this, a
    trial whose actor is starting waits for it, and the cached actor goes to a trial without
    one. A trial whose actor still waits for resources gives it up as before. Process-wide,
    once.
    """
    from ray.tune.execution.tune_controller import TuneController

    reuse = TuneController._maybe_reuse_cached_actor

    @functools.wraps(reuse)
    def _maybe_reuse_cached_actor(self: Any, trial: Any) -> bool:
        own = self._trial_to_actor.get(trial)
        if (
            own is not None
            and trial not in self._resetting_trials
            and self._actor_manager.is_actor_started(own)  # resources granted: it is starting
            and own not in self._started_actors
        ):
            return False
        return bool(reuse(self, trial))

    TuneController._maybe_reuse_cached_actor = _maybe_reuse_cached_actor
