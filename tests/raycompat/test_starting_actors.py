"""`let_starting_trial_actors_start`: which trials keep their starting actor, which reuse one.

The end-to-end case (a slot whose new actor starts while the other slot's trials end) is
`tests/engine/test_actor_reuse.py`; this table checks the rule on Tune's own method, with the
controller's state given as plain objects.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sweeplab.raycompat import let_starting_trial_actors_start


class Trial:
    placement_group_factory = "1 CPU"


class Cache:
    """Tune's actor cache with one cached actor; records whether Tune's own rule asked it."""

    def __init__(self) -> None:
        self.asked = False

    def has_cached_object(self, key: object) -> bool:
        self.asked = True
        return False  # Tune's rule then answers False without touching anything else


@pytest.mark.parametrize(
    ("own_actor", "has_resources", "started", "resetting", "tune_decides"),
    [
        (False, False, False, False, True),  # no actor yet: Tune's rule
        (True, False, False, False, True),  # its actor waits for resources: Tune's rule
        (True, True, False, False, False),  # its actor is starting: left to start
        (True, True, True, False, True),  # its actor started: Tune's rule
        (True, True, False, True, True),  # being reset: Tune's rule
    ],
    ids=["no-actor", "waiting-for-resources", "starting", "started", "resetting"],
)
def test_a_starting_actor_is_left_to_start(
    own_actor: bool, has_resources: bool, started: bool, resetting: bool, tune_decides: bool
) -> None:
    from ray.tune.execution.tune_controller import TuneController

    let_starting_trial_actors_start()
    let_starting_trial_actors_start()  # once: a second call wraps nothing again
    trial, actor, cache = Trial(), object(), Cache()
    controller = SimpleNamespace(
        _trial_to_actor={trial: actor} if own_actor else {},
        _resetting_trials={trial} if resetting else set(),
        _started_actors={actor} if started else set(),
        _actor_manager=SimpleNamespace(is_actor_started=lambda tracked: has_resources),
        _actor_cache=cache,
    )
    assert TuneController._maybe_reuse_cached_actor(controller, trial) is resetting
    assert cache.asked is (tune_decides and not resetting)
