"""A sweep's constraints, as Optuna's samplers learn them: each one's violation of a trial's values.

Optuna's samplers take constraints through ``constraints_func(frozen_trial) -> violations``
(``<= 0`` feasible), which they call when a trial is told, and store as the trial's
``constraints``. A sweep's constraints bound its objectives, so a trial's violations follow from
the values it is told with. But Optuna calls ``constraints_func`` before it stores those values
(``study.tell`` runs ``sampler.after_trial`` first), so the trial it is handed has none yet:
:class:`ToldValuesSampler` hands its base sampler the trial with the told values, and
:class:`ConstraintViolations` reads them. Both are plain module-level classes, so Tune can
pickle the searcher for a resume.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState

from sweeplab.pareto import Constraint
from sweeplab.space._wrapped_sampler import WrappedSampler

__all__ = ["ConstraintViolations", "ToldValuesSampler"]


@dataclasses.dataclass(frozen=True)
class ConstraintViolations:
    """Optuna's ``constraints_func``: each constraint's `Constraint.violation` of a trial's values.

    A trial told without values (pruned) breaks every constraint by infinity, as a missing value
    does (it ranks after the trials that report one).

    Attributes:
        objectives: The objectives' names, in the order of the study's values.
        constraints: The constraints, each bounding one of ``objectives``.
    """

    objectives: tuple[str, ...]
    constraints: tuple[Constraint, ...]

    def __post_init__(self) -> None:
        unknown = [c.metric for c in self.constraints if c.metric not in self.objectives]
        if unknown:
            raise ValueError(
                f"each constraint must bound an objective, but got {unknown=} "
                f"with objectives={list(self.objectives)}."
            )

    def __call__(self, trial: FrozenTrial) -> list[float]:
        values = trial.values
        return [
            c.violation(None if values is None else values[self.objectives.index(c.metric)])
            for c in self.constraints
        ]


class ToldValuesSampler(WrappedSampler):
    """Passes everything to ``base``, and hands its ``after_trial`` the trial with its told values.

    Only the copy handed to ``base`` carries the values; the study stores them as usual.
    """

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        told = copy.copy(trial)
        told.values = values
        self.base.after_trial(study, told, state, values)
