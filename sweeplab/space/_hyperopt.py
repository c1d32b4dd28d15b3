"""Compiling a space to a HyperOpt ``hp`` space."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sweeplab.space._primitives import (
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    _multiple_indices,
    is_log_int,
    multiple,
    thaw,
)
from sweeplab.space._space import Space
from sweeplab.space._walk import SpaceWalk, split_option

__all__ = ["compile_to_hyperopt", "encode_for_hyperopt"]


def _range(label: str, param: FloatRange | IntRange) -> Any:
    from hyperopt import hp
    from hyperopt.pyll import scope

    if param.low == param.high:
        return param.low  # HyperOpt rejects empty ranges; decode_config quantizes the constant.
    if is_log_int(param):
        # The floor of a log-uniform draw from [low, high + 1), as the random searcher draws.
        return scope.int(hp.loguniform(label, math.log(param.low), math.log(param.high + 1)))
    log_low, log_high = (math.log(param.low), math.log(param.high)) if param.log else (0.0, 0.0)
    # A range a few ulps wide can have equal logs, which HyperOpt rejects: drawn uniformly there.
    log = param.log and log_low < log_high
    if param.q is None:
        if log:
            return hp.loguniform(label, log_low, log_high)
        return hp.uniform(label, param.low, param.high)
    if log:
        return hp.qloguniform(label, log_low, log_high, param.q)
    # Widen by half a step so the first and last multiples are as likely as the others.
    k_lo, k_hi = _multiple_indices(param.low, param.high, param.q)
    half = param.q / 2
    return hp.quniform(
        label, multiple(k_lo, param.q) - half, multiple(k_hi, param.q) + half, param.q
    )


class _Compile(SpaceWalk):
    """The ``hp`` expression of each node, labelled by its '/'-joined path."""

    sep = "/"

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        return _range(path, param)

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        from hyperopt import hp

        return hp.choice(path, [thaw(o) for o in param.options])

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        from hyperopt import hp

        return hp.choice(path, [self.chosen(param, option, path) for option in param.branches])

    def constant(self, node: Any, path: str, value: Any) -> Any:
        return thaw(node)


class _Encode(SpaceWalk):
    """Collects HyperOpt's value of each node of a config in ``vals``."""

    sep = "/"

    def __init__(self) -> None:
        self.vals: dict[str, Any] = {}

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> None:
        if param.low != param.high:
            self.vals[path] = float(value)

    def choice(self, param: Choice, path: str, value: Any) -> None:
        index = param.find(value)
        assert index is not None, f"{path}: {value!r} is not an option"
        self.vals[path] = index

    def conditional(self, param: Conditional, path: str, value: Any) -> None:
        option, rest = split_option(value)
        self.vals[path] = list(param.branches).index(option)
        self.branch(param, option, path, rest)


def compile_to_hyperopt(space: Space | Mapping[str, Any]) -> dict[str, Any]:
    """Returns a HyperOpt search space (a dict of ``hp.*`` expressions) for ``space``.

    Labels are '/'-joined paths (a branch's parameters carry the option name:
    ``optimizer/sgd/momentum``). A conditional choice is an ``hp.choice`` over dicts that already
    have the final shape (``{"name": "sgd", "momentum": ...}``). HyperOpt returns quantized
    values as floats and may round ``qloguniform`` one step out of range; :func:`decode_config`
    snaps them back, so always decode what HyperOpt suggests. ``randint`` is compiled as a
    ``quniform`` over ``[low - 0.5, high + 0.5]`` so both bounds are reachable;
    ``randint(low, high, log=True)`` as ``scope.int(hp.loguniform(...))`` over
    ``[log(low), log(high + 1))``, the floor of a log-uniform draw.
    """
    return _Compile().walk(Space(space).params)


def encode_for_hyperopt(space: Space | Mapping[str, Any], config: Mapping[str, Any]) -> dict:
    """HyperOpt's values (``misc["vals"]`` of a trial) under which ``config`` is drawn.

    ``config`` is a config of ``space`` in final nested shape. Keys are the labels of
    :func:`compile_to_hyperopt`; a choice holds the option's index. Labels of branches that were
    not chosen, and ranges compiled to constants, are absent.
    """
    encode = _Encode()
    encode.walk(Space(space).params, "", config)
    return encode.vals
