"""What a scheduler does to trials besides running and stopping them, and what that costs Tune."""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.strategies._sweep import RuleBreak

__all__ = ["TRAITS_ATTRIBUTE", "SchedulerTraits", "object_traits", "tune_trial_limit"]

# The attribute in which a scheduler object (or its class) may declare its traits.
TRAITS_ATTRIBUTE = "sweeplab_traits"


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulerTraits:
    """What a Tune scheduler does to trials besides letting them run or stopping them.

    A configured scheduler of a class sweeplab does not know declares these, either with the
    Sweep field ``scheduler_traits=sweeplab.SchedulerTraits(pauses=..., exploits=...)`` or in
    an attribute ``sweeplab_traits`` of the scheduler object or its class.

    Attributes:
        pauses: It pauses trials and resumes them later (their actors, if reused, stay held).
        exploits: It replaces a trial's config and weights with another trial's (PBT).
    """

    pauses: bool
    exploits: bool

    @property
    def only_stops(self) -> bool:
        """It neither pauses nor exploits: it never comes back to a trial that ended."""
        return not (self.pauses or self.exploits)

    def __post_init__(self) -> None:
        for name in ("pauses", "exploits"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise SpecError(f"SchedulerTraits.{name} must be True or False, but got {value!r}.")


def object_traits(scheduler: Any, declared: SchedulerTraits | None) -> SchedulerTraits | RuleBreak:
    """The traits of a configured scheduler object, or the rule it breaks by having none.

    In this order: `declared` (the Sweep's ``scheduler_traits`` field), the object's (or its
    class's) ``sweeplab_traits`` attribute, then its Tune class (see `class_traits`). They are
    never guessed: reusing trial actors under a pausing scheduler was seen to wait forever
    for resources.
    """
    if declared is not None:
        return declared
    attribute = getattr(scheduler, TRAITS_ATTRIBUTE, None)
    if attribute is not None:
        if isinstance(attribute, SchedulerTraits):
            return attribute
        return RuleBreak(
            "scheduler",
            f"declares its traits in `{TRAITS_ATTRIBUTE}`, which must be a "
            f"sweeplab.SchedulerTraits(pauses=..., exploits=...), not {attribute!r}",
            scheduler,
        )
    traits = class_traits(scheduler)
    if traits is not None:
        return traits
    return RuleBreak(
        "scheduler",
        f"is a {type(scheduler).__qualname__}, whose traits sweeplab cannot read from its class: "
        "declare its traits with scheduler_traits=sweeplab.SchedulerTraits(pauses=..., "
        f"exploits=...) (or in a `{TRAITS_ATTRIBUTE}` attribute of the scheduler)",
        scheduler,
    )


def class_traits(scheduler: Any) -> SchedulerTraits | None:
    """The traits of a Tune scheduler from its class (a subclass has its base's), if known.

    ASHA, median stopping (with ``hard_stop``) and FIFO only stop trials; synchronous
    HyperBand (and BOHB) pauses them; PBT (and PB2) pauses and exploits. Any other class is
    unknown (`None`), a subclass of ``FIFOScheduler`` included: every Tune scheduler is one.
    """
    from ray.tune.schedulers import (
        AsyncHyperBandScheduler,
        FIFOScheduler,
        HyperBandScheduler,
        MedianStoppingRule,
        PopulationBasedTraining,
    )

    from sweeplab.raycompat import median_rule_stops_hard

    if isinstance(scheduler, PopulationBasedTraining):
        return SchedulerTraits(pauses=True, exploits=True)
    if isinstance(scheduler, HyperBandScheduler):
        return SchedulerTraits(pauses=True, exploits=False)
    if isinstance(scheduler, MedianStoppingRule):
        # `hard_stop=False` pauses instead of stopping.
        return SchedulerTraits(pauses=not median_rule_stops_hard(scheduler), exploits=False)
    if isinstance(scheduler, AsyncHyperBandScheduler) or type(scheduler) is FIFOScheduler:
        return SchedulerTraits(pauses=False, exploits=False)
    return None


def tune_trial_limit(
    traits: SchedulerTraits, *, concurrency: int, total_trials: int, waiting_holds_nothing: bool
) -> int:
    """How many trials Tune may hold at once (its `max_concurrent_trials`).

    Tune counts paused trials against this limit and creates trials only below it. A scheduler
    that pauses trials until the others catch up (HyperBand's brackets, PBT's rounds) then sees
    only `concurrency` trials and never compares more. Where a trial that waits holds no
    resources (on warm slots it holds nothing until it claims a slot; a one-worker trial waits
    in Tune's queue for its actor's CPUs), every trial is created up front, and the slots or
    the CPUs alone bound how many train at once.
    """
    if waiting_holds_nothing and not traits.only_stops:
        return max(concurrency, total_trials)
    return concurrency
