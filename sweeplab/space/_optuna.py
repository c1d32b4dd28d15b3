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
    multiple,
    thaw,
)
from sweeplab.space._space import Space

if TYPE_CHECKING:
    import optuna

__all__ = ["compile_to_optuna", "encode_for_optuna"]

_CATEGORICAL_TYPES = (type(None), bool, int, float, str)


def _suggest_range(trial: optuna.Trial, name: str, param: FloatRange | IntRange) -> Any:
    from sweeplab.space._primitives import _multiple_indices

    if param.q is None:
        return trial.suggest_float(name, param.low, param.high, log=param.log)
    if param.log:
        if isinstance(param, IntRange) and param.q == 1:
            return trial.suggest_int(name, param.low, param.high, log=True)
        # Optuna has no log scale with a step: suggest on a log scale and let decode_config
        # snap the value to the nearest multiple of q.
        return trial.suggest_float(name, param.low, param.high, log=True)
    # Optuna's steps start at `low`; start at the first multiple of q so values are k * q.
    k_lo, k_hi = _multiple_indices(param.low, param.high, param.q)
    low, high = multiple(k_lo, param.q), multiple(k_hi, param.q)
    if isinstance(param, IntRange):
        return trial.suggest_int(name, int(low), int(high), step=param.q)
    return trial.suggest_float(name, low, high, step=param.q)


def _categorical_labels(options: tuple[Any, ...]) -> list[Any]:
    # Optuna only stores None/bool/int/float/str choices; lists travel as their JSON text.
    return [o if isinstance(o, _CATEGORICAL_TYPES) else json.dumps(thaw(o)) for o in options]


def _suggest_tree(
    trial: optuna.Trial, tree: Mapping[str, Any], prefix: str, constants: dict[str, Any]
) -> None:
    for key, param in tree.items():
        name = f"{prefix}{key}"
        if isinstance(param, dict):
            _suggest_tree(trial, param, f"{name}/", constants)
        elif isinstance(param, (FloatRange, IntRange)):
            _suggest_range(trial, name, param)
        elif isinstance(param, Choice):
            trial.suggest_categorical(name, _categorical_labels(param.options))
        elif isinstance(param, Conditional):
            option = trial.suggest_categorical(f"{name}/{OPTION_KEY}", list(param.branches))
            _suggest_tree(trial, param.branches[str(option)], f"{name}/{option}/", constants)
        else:
            constants[name] = thaw(param)


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
    ``randint`` uses ``suggest_int`` (inclusive); choices of lists are suggested as JSON text.
    """
    return _DefineByRun(Space(space))


class _DefineByRun:
    """The define-by-run function; a class so that Tune can pickle the searcher's state."""

    def __init__(self, space: Space) -> None:
        self.space = space

    def __call__(self, trial: Any) -> dict[str, Any]:
        constants: dict[str, Any] = {}
        _suggest_tree(trial, self.space.params, "", constants)
        return constants


def encode_for_optuna(space: Space | Mapping[str, Any], config: Mapping[str, Any]) -> dict:
    """The Optuna params (``trial.params``) under which :func:`compile_to_optuna` yields ``config``.

    ``config`` is a config of ``space`` in final nested shape. Run the compiled function on
    ``optuna.trial.FixedTrial(encode_for_optuna(space, config))`` to get the distributions too.
    """
    params: dict[str, Any] = {}

    def encode(tree: Mapping[str, Any], values: Mapping[str, Any], prefix: str) -> None:
        for key, param in tree.items():
            name, value = f"{prefix}{key}", values[key]
            if isinstance(param, dict):
                encode(param, value, f"{name}/")
            elif isinstance(param, (FloatRange, IntRange)):
                params[name] = value
            elif isinstance(param, Choice):
                index = param.find(value)
                assert index is not None, f"{name}: {value!r} is not an option"
                params[name] = _categorical_labels(param.options)[index]
            elif isinstance(param, Conditional):
                option = value["name"]
                params[f"{name}/{OPTION_KEY}"] = option
                rest = {k: v for k, v in value.items() if k != "name"}
                encode(param.branches[option], rest, f"{name}/{option}/")

    encode(Space(space).params, config, "")
    return params
