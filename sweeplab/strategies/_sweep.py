"""A sweep as the strategies see it: the fields they read, and the rule a sweep breaks.

The strategies sit below `sweeplab.spec`, so they take any object with these fields (a
`sweeplab.Sweep` has them all) instead of importing `Sweep`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from sweeplab.errors import SpecError
from sweeplab.pareto import Constraint, Objective
from sweeplab.space import Space

__all__ = ["RuleBreak", "StrategySweep"]


class StrategySweep(Protocol):
    """The fields of a sweep that choosing, checking, building and previewing its strategy read.

    See `sweeplab.Sweep` for what each means.
    """

    @property
    def space(self) -> Space: ...

    @property
    def metric(self) -> str: ...

    @property
    def mode(self) -> str: ...

    @property
    def objectives(self) -> tuple[Objective, ...]: ...

    @property
    def constraints(self) -> tuple[Constraint, ...]: ...

    @property
    def searcher(self) -> Any: ...

    @property
    def scheduler(self) -> Any: ...

    @property
    def scheduler_traits(self) -> Any: ...

    @property
    def num_trials(self) -> int: ...

    @property
    def max_iterations(self) -> int: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def warm_start(self) -> Any: ...


@dataclasses.dataclass(frozen=True)
class RuleBreak:
    """A rule of the strategies that a sweep breaks: the field at fault, the rule, its value.

    `sweeplab.Sweep` raises it as its own field errors; `error` is the same `SpecError` for a
    caller outside the Sweep's validation.
    """

    field: str
    rule: str
    value: object

    def error(self) -> SpecError:
        return SpecError(f"Sweep field `{self.field}` {self.rule}, but got {self.value!r}.")
