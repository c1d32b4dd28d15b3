"""The settings of sweeplab's synchronous PBT: ``Sweep(scheduler=sweeplab.PBT(...))``."""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.strategies._schedule import (
    PBT_QUANTILE_FRACTION,
    PBT_RESAMPLE_PROBABILITY,
    pbt_interval,
)

__all__ = ["PBT", "names_pbt", "pbt_settings"]


@dataclasses.dataclass(frozen=True)
class PBT:
    """sweeplab's synchronous PBT with its settings: ``Sweep(scheduler=sweeplab.PBT(...))``.

    ``scheduler="pbt"`` is ``PBT()``. Every `interval` iterations the trials meet in a round;
    each of the bottom `quantile_fraction` takes the checkpoint of one of the top
    `quantile_fraction` and its config, explored (see ``docs/search.md``).

    Attributes:
        interval: Iterations between two rounds, at least 1 and below the sweep's
            ``max_iterations``; None: a quarter of ``max_iterations`` (at least 1).
        quantile_fraction: The share of ranked trials in the bottom (and the top) quantile,
            ``0 < quantile_fraction <= 0.5``.
        resample_probability: The chance, ``0 <= p <= 1``, that an explored value is drawn
            afresh from its range or choice instead of perturbed (a range times 0.8 or 1.2, a
            choice shifted to a neighbour).
        mutate: The parameters an exploit may change, by their dotted paths in the space
            (``"lr"``, ``"model.dropout"``; a conditional choice by its own path); None: every
            range and choice. Leave out what the donor's checkpoint depends on (a layer's
            width): the recipient loads that checkpoint with the explored config.
    """

    interval: int | None = None
    quantile_fraction: float = PBT_QUANTILE_FRACTION
    resample_probability: float = PBT_RESAMPLE_PROBABILITY
    mutate: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        interval = self.interval
        if interval is not None and (
            isinstance(interval, bool) or not isinstance(interval, int) or interval < 1
        ):
            raise SpecError(f"PBT.interval must be an integer >= 1 or None, but got {interval!r}.")
        fraction = self.quantile_fraction
        if not _is_number(fraction) or not 0 < fraction <= 0.5:
            raise SpecError(
                f"PBT.quantile_fraction must be a number above 0 and at most 0.5, but got "
                f"{fraction!r}."
            )
        probability = self.resample_probability
        if not _is_number(probability) or not 0 <= probability <= 1:
            raise SpecError(
                f"PBT.resample_probability must be a number from 0 to 1, but got {probability!r}."
            )
        mutate = self.mutate
        if mutate is not None:
            if isinstance(mutate, str):
                mutate = (mutate,)
            if not isinstance(mutate, (list, tuple)) or not all(
                isinstance(path, str) for path in mutate
            ):
                raise SpecError(
                    f"PBT.mutate must be a list of parameter paths or None, but got {mutate!r}."
                )
            if not mutate:
                raise SpecError(
                    "PBT.mutate must name at least one parameter (None: every range and choice)."
                )
            object.__setattr__(self, "mutate", tuple(mutate))

    def interval_for(self, max_iterations: int) -> int:
        """Iterations between two rounds in a sweep of `max_iterations` a trial."""
        return self.interval if self.interval is not None else pbt_interval(max_iterations)

    def describe(self) -> str:
        """``pbt``, with the settings that differ from the defaults."""
        changed = [
            f"{field.name}={getattr(self, field.name)!r}"
            for field in dataclasses.fields(self)
            if getattr(self, field.name) != field.default
        ]
        return f"pbt({', '.join(changed)})" if changed else "pbt"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def names_pbt(scheduler: Any) -> bool:
    """Whether a Sweep's `scheduler` is sweeplab's synchronous PBT (``"pbt"`` or a `PBT`)."""
    return scheduler == "pbt" or isinstance(scheduler, PBT)


def pbt_settings(scheduler: Any) -> PBT:
    """The settings of sweeplab's PBT that `scheduler` names: a `PBT` as given, else defaults."""
    return scheduler if isinstance(scheduler, PBT) else PBT()
