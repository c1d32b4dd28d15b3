"""Compiling a space to an Optuna define-by-run function."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sweeplab.space._decode import OPTION_KEY
from sweeplab.space._primitives import (
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    Param,
    _multiple_indices,
    is_log_int,
    multiple,
    thaw,
)
from sweeplab.space._space import Space
from sweeplab.space._walk import SpaceWalk, split_option

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution

__all__ = ["compile_to_optuna", "encode_for_optuna", "optuna_distribution"]

_CATEGORICAL_TYPES = (type(None), bool, int, float, str)


def optuna_distribution(param: Param) -> BaseDistribution:
    """The Optuna distribution that :func:`compile_to_optuna` suggests ``param`` from.

    A range gives a ``FloatDistribution`` or ``IntDistribution`` (``log=True`` for log ranges, so
    ``randint(low, high, log=True)`` is ``IntDistribution(low, high, log=True)``; ``quniform``
    with ``step=q`` from the first multiple of ``q`` in range; ``qloguniform`` on a log scale
    without a step, snapped by :func:`decode_config`); a choice gives a
    ``CategoricalDistribution`` over its options (lists as their JSON text); a conditional
    choice gives one over its option names. Imports Optuna.
    """
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if isinstance(param, Choice):
        return CategoricalDistribution(_categorical_labels(param.options))
    if isinstance(param, Conditional):
        return CategoricalDistribution(list(param.branches))
    if param.q is None:
        return FloatDistribution(param.low, param.high, log=param.log)
    if is_log_int(param):
        return IntDistribution(param.low, param.high, log=True)
    if param.log:
        # Optuna has no log scale with a step: suggest on a log scale and let decode_config
        # snap the value to the nearest multiple of q.
        return FloatDistribution(param.low, param.high, log=True)
    # Optuna's steps start at `low`; start at the first multiple of q so values are k * q.
    k_lo, k_hi = _multiple_indices(param.low, param.high, param.q)
    low, high = multiple(k_lo, param.q), multiple(k_hi, param.q)
    if isinstance(param, IntRange):
        return IntDistribution(int(low), int(high), step=param.q)
    return FloatDistribution(low, high, step=param.q)


def _suggest(trial: optuna.Trial, name: str, param: Param) -> Any:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    dist = optuna_distribution(param)
    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(name, list(dist.choices))
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)


def _categorical_labels(options: tuple[Any, ...]) -> list[Any]:
    # Optuna only stores None/bool/int/float/str choices; lists travel as their JSON text.
    return [o if isinstance(o, _CATEGORICAL_TYPES) else json.dumps(thaw(o)) for o in options]


class _Suggest(SpaceWalk):
    """Suggests each parameter on ``trial`` (a conditional: its option, then that branch) and
    collects the constants of the chosen branches."""

    sep = "/"

    def __init__(self, trial: optuna.Trial) -> None:
        self.trial = trial
        self.constants: dict[str, Any] = {}

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> None:
        _suggest(self.trial, path, param)

    def choice(self, param: Choice, path: str, value: Any) -> None:
        _suggest(self.trial, path, param)

    def conditional(self, param: Conditional, path: str, value: Any) -> None:
        option = _suggest(self.trial, self.join(path, OPTION_KEY), param)
        self.branch(param, str(option), path)

    def constant(self, node: Any, path: str, value: Any) -> None:
        self.constants[path] = thaw(node)


class _Encode(SpaceWalk):
    """Collects the Optuna param of each node of a config in ``params``."""

    sep = "/"

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> None:
        self.params[path] = value

    def choice(self, param: Choice, path: str, value: Any) -> None:
        index = param.find(value)
        assert index is not None, f"{path}: {value!r} is not an option"
        self.params[path] = _categorical_labels(param.options)[index]

    def conditional(self, param: Conditional, path: str, value: Any) -> None:
        option, rest = split_option(value)
        self.params[self.join(path, OPTION_KEY)] = option
        self.branch(param, option, path, rest)


def compile_to_optuna(space: Space | Mapping[str, Any]) -> Callable[[Any], dict[str, Any]]:
    """Returns an Optuna define-by-run function for ``space``.

    The function takes an ``optuna.Trial`` and suggests one parameter per primitive, named by
    its '/'-joined path (``model/dropout``). A conditional choice at ``optimizer`` suggests
    ``optimizer/_option`` and then only that branch's parameters (``optimizer/sgd/momentum``).
    It returns the constants of the chosen branches (as Ray's ``OptunaSearch`` expects).
    Turn ``trial.params`` (or what ``OptunaSearch`` suggests) into a config with
    :func:`decode_config`.

    Log ranges use ``log=True``; ``quniform`` uses ``step=q`` starting at the first multiple of
    ``q``; ``qloguniform`` is suggested on a log scale and snapped by ``decode_config``;
    ``randint`` uses ``suggest_int`` (inclusive; ``log=True`` for a log ``randint``); choices of
    lists are suggested as JSON text.
    """
    return _DefineByRun(Space(space))


class _DefineByRun:
    """The define-by-run function; a class so that Tune can pickle the searcher's state."""

    def __init__(self, space: Space) -> None:
        self.space = space

    def __call__(self, trial: Any) -> dict[str, Any]:
        suggest = _Suggest(trial)
        suggest.walk(self.space.params)
        return suggest.constants


def encode_for_optuna(space: Space | Mapping[str, Any], config: Mapping[str, Any]) -> dict:
    """The Optuna params (``trial.params``) under which :func:`compile_to_optuna` yields ``config``.

    ``config`` is a config of ``space`` in final nested shape. Run the compiled function on
    ``optuna.trial.FixedTrial(encode_for_optuna(space, config))`` to get the distributions too.
    """
    encode = _Encode()
    encode.walk(Space(space).params, "", config)
    return encode.params
