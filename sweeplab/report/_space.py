"""The Optuna distributions of a sweep's search space, as its logged spec defines them."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData

SPACE_ARTIFACT = "spec/space.yaml"


def read_space(data: SweepData, *, tracking_uri: str | None = None) -> Space | None:
    """The search space a sweep logged (its parent run's ``spec/space.yaml``), or ``None``."""
    from sweeplab.space import load_space
    from sweeplab.tracking import tracking_client

    client, _ = tracking_client(tracking_uri)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = client.download_artifacts(data.parent_run_id, SPACE_ARTIFACT, tmp)
        except Exception:  # an older sweep, or a store without artifacts: infer from values
            return None
        return load_space(Path(path))


class _RangeRecorder:
    """Stands in for an ``optuna.Trial``: returns the distribution a suggestion would use, so
    the distributions are exactly those of :func:`sweeplab.space.compile_to_optuna`."""

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> BaseDistribution:
        from optuna.distributions import FloatDistribution

        return FloatDistribution(low, high, step=step, log=log)

    def suggest_int(
        self, name: str, low: int, high: int, *, step: int = 1, log: bool = False
    ) -> BaseDistribution:
        from optuna.distributions import IntDistribution

        return IntDistribution(low, high, step=step, log=log)


def space_distributions(space: Space) -> dict[str, BaseDistribution]:
    """One Optuna distribution per param of ``space``, named as MLflow logs it (dotted).

    Ranges and choices compile as :func:`~sweeplab.space.compile_to_optuna` suggests them
    (``loguniform`` -> ``FloatDistribution(log=True)``). A conditional choice at ``optimizer``
    gives ``optimizer.name`` (the branch) and each branch's params (``optimizer.momentum``);
    a name that two branches share gets one distribution that covers both.
    """
    from optuna.distributions import CategoricalDistribution

    from sweeplab.space import Choice, Conditional, FloatRange, IntRange, optuna_distribution

    found: dict[str, BaseDistribution] = {}

    def add(name: str, distribution: BaseDistribution) -> None:
        found[name] = _merge(found[name], distribution) if name in found else distribution

    def walk(tree: Mapping[str, Any], prefix: str) -> None:
        for key, param in tree.items():
            name = f"{prefix}{key}"
            if isinstance(param, dict):
                walk(param, f"{name}.")
            elif isinstance(param, (FloatRange, IntRange, Choice)):
                add(name, optuna_distribution(param))
            elif isinstance(param, Conditional):
                add(f"{name}.name", CategoricalDistribution(list(param.branches)))
                for branch in param.branches.values():
                    walk(branch, f"{name}.")

    walk(space.params, "")
    return found


def _merge(a: BaseDistribution, b: BaseDistribution) -> BaseDistribution:
    """The smallest distribution of a's kind that holds both a and b."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if a == b:
        return a
    if isinstance(a, CategoricalDistribution) or isinstance(b, CategoricalDistribution):
        choices = [*_choices(a), *(c for c in _choices(b) if c not in _choices(a))]
        return CategoricalDistribution(choices)
    low = min(a.low, b.low)
    high = max(a.high, b.high)
    log = a.log and b.log and low > 0
    if isinstance(a, IntDistribution) and isinstance(b, IntDistribution):
        return IntDistribution(int(low), int(high), log=log)
    return FloatDistribution(float(low), float(high), log=log)


def _choices(distribution: BaseDistribution) -> list[Any]:
    from optuna.distributions import CategoricalDistribution

    if isinstance(distribution, CategoricalDistribution):
        return list(distribution.choices)
    return [distribution.low, distribution.high]


def _observed(values: list[Any]) -> BaseDistribution:
    """A distribution over observed values, for a param the logged space does not name."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return IntDistribution(min(values), max(values))
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return FloatDistribution(float(min(values)), float(max(values)))
    return CategoricalDistribution(sorted(set(values), key=str))


def _as_choice(distribution: BaseDistribution, value: Any) -> Any:
    """The categorical label that an MLflow param (a string, typed back) stands for."""
    from optuna.distributions import CategoricalDistribution

    if not isinstance(distribution, CategoricalDistribution):
        return value
    for choice in distribution.choices:
        if choice == value and type(choice) is type(value):
            return choice
    for choice in distribution.choices:
        if str(choice) == str(value):
            return choice
    return value


def _contains(distribution: BaseDistribution, value: Any) -> bool:
    from optuna.distributions import CategoricalDistribution

    if isinstance(distribution, CategoricalDistribution):
        return value in distribution.choices
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    low, high = distribution.low, distribution.high
    step = getattr(distribution, "step", None)
    on_grid = step is None or math.isclose(
        (value - low) / step, round((value - low) / step), abs_tol=1e-8
    )
    return bool(low <= value <= high and on_grid)
