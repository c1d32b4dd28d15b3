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
    multiple,
    thaw,
)
from sweeplab.space._space import Space

__all__ = ["compile_to_hyperopt", "encode_for_hyperopt"]


def _range(label: str, param: FloatRange | IntRange) -> Any:
    from hyperopt import hp

    if param.low == param.high:
        return param.low  # HyperOpt rejects empty ranges; decode_config quantizes the constant.
    log_low, log_high = (math.log(param.low), math.log(param.high)) if param.log else (0.0, 0.0)
    if param.q is None:
        if param.log:
            return hp.loguniform(label, log_low, log_high)
        return hp.uniform(label, param.low, param.high)
    if param.log:
        return hp.qloguniform(label, log_low, log_high, param.q)
    # Widen by half a step so the first and last multiples are as likely as the others.
    k_lo, k_hi = _multiple_indices(param.low, param.high, param.q)
    half = param.q / 2
    return hp.quniform(
        label, multiple(k_lo, param.q) - half, multiple(k_hi, param.q) + half, param.q
    )


def _tree(tree: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    from hyperopt import hp

    out: dict[str, Any] = {}
    for key, param in tree.items():
        label = f"{prefix}{key}"
        if isinstance(param, dict):
            out[key] = _tree(param, f"{label}/")
        elif isinstance(param, (FloatRange, IntRange)):
            out[key] = _range(label, param)
        elif isinstance(param, Choice):
            out[key] = hp.choice(label, [thaw(o) for o in param.options])
        elif isinstance(param, Conditional):
            out[key] = hp.choice(
                label,
                [
                    {"name": option, **_tree(branch, f"{label}/{option}/")}
                    for option, branch in param.branches.items()
                ],
            )
        else:
            out[key] = thaw(param)
    return out


def compile_to_hyperopt(space: Space | Mapping[str, Any]) -> dict[str, Any]:
    """Returns a HyperOpt search space (a dict of ``hp.*`` expressions) for ``space``.

    Labels are '/'-joined paths (a branch's parameters carry the option name:
    ``optimizer/sgd/momentum``). A conditional choice is an ``hp.choice`` over dicts that already
    have the final shape (``{"name": "sgd", "momentum": ...}``). HyperOpt returns quantized
    values as floats and may round ``qloguniform`` one step out of range; :func:`decode_config`
    snaps them back, so always decode what HyperOpt suggests. ``randint`` is compiled as a
    ``quniform`` over ``[low - 0.5, high + 0.5]`` so both bounds are reachable.
    """
    return _tree(Space(space).params, "")


def encode_for_hyperopt(space: Space | Mapping[str, Any], config: Mapping[str, Any]) -> dict:
    """HyperOpt's values (``misc["vals"]`` of a trial) under which ``config`` is drawn.

    ``config`` is a config of ``space`` in final nested shape. Keys are the labels of
    :func:`compile_to_hyperopt`; a choice holds the option's index. Labels of branches that were
    not chosen, and ranges compiled to constants, are absent.
    """
    vals: dict[str, Any] = {}

    def encode(tree: Mapping[str, Any], values: Mapping[str, Any], prefix: str) -> None:
        for key, param in tree.items():
            label, value = f"{prefix}{key}", values[key]
            if isinstance(param, dict):
                encode(param, value, f"{label}/")
            elif isinstance(param, (FloatRange, IntRange)):
                if param.low != param.high:
                    vals[label] = float(value)
            elif isinstance(param, Choice):
                index = param.find(value)
                assert index is not None, f"{label}: {value!r} is not an option"
                vals[label] = index
            elif isinstance(param, Conditional):
                option = value["name"]
                vals[label] = list(param.branches).index(option)
                rest = {k: v for k, v in value.items() if k != "name"}
                encode(param.branches[option], rest, f"{label}/{option}/")

    encode(Space(space).params, config, "")
    return vals
