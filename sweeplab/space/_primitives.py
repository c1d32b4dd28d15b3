"""Search-space primitives: small immutable, validated parameter declarations.

All ranges include both bounds. Quantized ranges hold the multiples of ``q`` (``k * q`` for whole
``k``) that lie in ``[low, high]``; a range with no such multiple is rejected. A log-scaled integer
(``randint(low, high, log=True)``) is an ``IntRange(log=True)`` with ``q=1``.
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, TypeAlias

from sweeplab._numbers import is_number
from sweeplab.errors import SpecError

__all__ = [
    "Choice",
    "Conditional",
    "FloatRange",
    "IntRange",
    "Param",
    "check_name",
    "choice",
    "freeze",
    "grid",
    "loguniform",
    "qloguniform",
    "quniform",
    "randint",
    "thaw",
    "uniform",
]

Scalar: TypeAlias = "str | int | float | bool | None"


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_bounds(low: Any, high: Any) -> None:
    if not (is_number(low) and is_number(high)):
        hint = ""
        if any(isinstance(b, str) and _parses_as_float(b) for b in (low, high)):
            hint = " (YAML reads 1e-4 as a string: write 1.0e-4)"
        raise SpecError(f"the bounds must be numbers (not bool), but got ({low=}, {high=}){hint}.")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise SpecError(f"the bounds must be finite, but got ({low=}, {high=}).")
    if low > high:
        raise SpecError(f"`low <= high` must hold, but got ({low=}, {high=}).")


def _parses_as_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_log(low: float, high: float, *, integer: bool = False) -> None:
    if integer and low < 1:
        raise SpecError(f"`low >= 1` must hold for a log integer range, but got ({low=}, {high=}).")
    if low <= 0:
        raise SpecError(f"`low > 0` must hold for a log range, but got ({low=}, {high=}).")


def _check_log_flag(log: Any) -> None:
    if not isinstance(log, bool):
        raise SpecError(f"`log` must be true or false, but got (log={log!r}).")


def _check_q(q: Any) -> None:
    if not is_number(q) or not math.isfinite(q) or q <= 0:
        raise SpecError(f"`q` must be a finite number > 0, but got ({q=}).")


def _dec(value: float) -> Decimal:
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(int(value))


def _multiple_indices(low: float, high: float, q: float) -> tuple[int, int]:
    """Returns the first and last ``k`` such that ``k * q`` lies in ``[low, high]`` (exactly)."""
    dq = _dec(q)
    k_lo = int((_dec(low) / dq).to_integral_value(rounding=ROUND_CEILING))
    k_hi = int((_dec(high) / dq).to_integral_value(rounding=ROUND_FLOOR))
    return k_lo, k_hi


def _check_multiples(low: float, high: float, q: float) -> None:
    k_lo, k_hi = _multiple_indices(low, high, q)
    if k_lo > k_hi:
        raise SpecError(
            f"no multiple of `q` lies in [low, high], so nothing can be sampled, "
            f"but got ({low=}, {high=}, {q=})."
        )


@dataclass(frozen=True)
class FloatRange:
    """A float in ``[low, high]``, both bounds inclusive.

    Args:
        low: Lower bound (inclusive).
        high: Upper bound (inclusive), ``low <= high``.
        log: Sample uniformly in log space; needs ``low > 0``.
        q: If set, values are the multiples ``k * q`` (whole ``k``) that lie in ``[low, high]``.
    """

    low: float
    high: float
    log: bool = field(default=False, kw_only=True)
    q: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        _check_bounds(self.low, self.high)
        object.__setattr__(self, "low", float(self.low))
        object.__setattr__(self, "high", float(self.high))
        _check_log_flag(self.log)
        if self.log:
            _check_log(self.low, self.high)
        if self.q is not None:
            _check_q(self.q)
            _check_multiples(self.low, self.high, self.q)


@dataclass(frozen=True)
class IntRange:
    """An integer in ``[low, high]``, both bounds inclusive.

    Args:
        low: Lower bound (inclusive).
        high: Upper bound (inclusive), ``low <= high``.
        log: Sample uniformly in log space; needs ``low >= 1``. With ``q == 1`` (a log integer,
            :func:`randint` with ``log=True``) each integer ``v`` is drawn with a weight of
            ``log((v + 1) / v)``, as Ray Tune's ``lograndint(low, high + 1)`` draws; with a
            larger ``q`` the draw is rounded to the nearest multiple of ``q``.
        q: Values are the multiples ``k * q`` (whole ``k``) in ``[low, high]``; 1 means any
            integer.
    """

    low: int
    high: int
    log: bool = field(default=False, kw_only=True)
    q: int = field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        if not (_is_int(self.low) and _is_int(self.high)):
            raise SpecError(
                f"the bounds of an integer range must be integers, but got "
                f"(low={self.low!r}, high={self.high!r})."
            )
        _check_bounds(self.low, self.high)
        object.__setattr__(self, "low", int(self.low))
        object.__setattr__(self, "high", int(self.high))
        _check_log_flag(self.log)
        if self.log:
            _check_log(self.low, self.high, integer=True)
        if not _is_int(self.q) or self.q <= 0:
            raise SpecError(f"`q` must be an integer > 0, but got (q={self.q!r}).")
        object.__setattr__(self, "q", int(self.q))
        _check_multiples(self.low, self.high, self.q)


def freeze(value: Any, *, what: str = "a constant") -> Any:
    """Returns ``value`` as an immutable, serialisable constant (lists become tuples).

    Raises:
        SpecError: If ``value`` is not None, a bool, a finite number, a string or a list of these.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if is_number(value):
        if not math.isfinite(value):
            raise SpecError(f"{what} must be finite, but got {value!r}.")
        return int(value) if _is_int(value) else float(value)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item, what=what) for item in value)
    raise SpecError(
        f"{what} must be None, a bool, a number, a string or a list of these, "
        f"but got {value!r} of type {type(value).__name__}."
    )


def thaw(value: Any) -> Any:
    """Inverse of :func:`freeze`: tuples become lists."""
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


def same_value(a: Any, b: Any) -> bool:
    """Equality that tells bools from numbers (``True != 1`` here) and lists from scalars."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


@dataclass(frozen=True)
class Choice:
    """One of a list of options, drawn uniformly.

    Args:
        options: The candidate values: None, bools, finite numbers, strings, or lists of these.
            They must be distinct by ``==`` (so ``1``, ``1.0`` and ``True`` count as the same).
        grid: Exhaust every option (grid search) instead of sampling, where the backend can.
    """

    options: tuple[Any, ...]
    grid: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        if isinstance(self.options, (str, bytes, Mapping)) or not isinstance(
            self.options, Sequence
        ):
            raise SpecError(f"the options must be a list, but got {self.options!r}.")
        options = tuple(freeze(option, what="an option") for option in self.options)
        if not options:
            raise SpecError("the options must not be empty, but got [].")
        for i, option in enumerate(options):
            if any(option == other for other in options[:i]):
                raise SpecError(
                    f"the options must be distinct by `==` (1, 1.0 and True are equal), but "
                    f"{thaw(option)!r} repeats an earlier option in {thaw(options)!r}."
                )
        object.__setattr__(self, "options", options)

    def find(self, value: Any) -> int | None:
        """Returns the index of the option equal to ``value``, or None."""
        frozen = _try_freeze(value)
        for i, option in enumerate(self.options):
            if same_value(option, frozen):
                return i
        return None


def _try_freeze(value: Any) -> Any:
    try:
        return freeze(value)
    except SpecError:
        return value


@dataclass(frozen=True)
class Conditional:
    """A choice between named sub-spaces; only the chosen branch is sampled.

    The sampled value is ``{"name": <option name>, **<that branch's values>}``.

    Args:
        branches: Option name -> sub-space (a mapping of parameter name to parameter).
    """

    branches: Mapping[str, Mapping[str, Any]]

    def __post_init__(self) -> None:
        if not isinstance(self.branches, Mapping):
            raise SpecError(f"the branches must be a mapping, but got {self.branches!r}.")
        if not self.branches:
            raise SpecError("the options must not be empty, but got {}.")
        for name, branch in self.branches.items():
            check_name(name, what="an option name")
            if not isinstance(branch, Mapping):
                raise SpecError(
                    f"the sub-space of option {name!r} must be a mapping of parameters, "
                    f"but got {branch!r}."
                )
        object.__setattr__(self, "branches", {k: dict(v) for k, v in self.branches.items()})

    __hash__ = None  # type: ignore[assignment]


Param: TypeAlias = FloatRange | IntRange | Choice | Conditional
PARAM_TYPES = (FloatRange, IntRange, Choice, Conditional)


def check_name(name: object, *, what: str = "a parameter name") -> None:
    """Raises SpecError unless ``name`` is a non-empty string without '.' or '/' and no '_' head."""
    if not isinstance(name, str) or not name:
        raise SpecError(f"{what} must be a non-empty string, but got {name!r}.")
    if "." in name or "/" in name:
        raise SpecError(
            f"{what} must not contain '.' (the flattening separator) or '/' (Ray Tune's), "
            f"but got {name!r}."
        )
    if name.startswith("_"):
        raise SpecError(f"{what} must not start with '_' (reserved), but got {name!r}.")


def uniform(low: float, high: float) -> FloatRange:
    """A float drawn uniformly from ``[low, high]`` (both bounds inclusive)."""
    return FloatRange(low, high)


def loguniform(low: float, high: float) -> FloatRange:
    """A float drawn uniformly in log space from ``[low, high]`` (both inclusive, ``low > 0``)."""
    return FloatRange(low, high, log=True)


def _quantized(low: float, high: float, q: float, *, log: bool) -> FloatRange | IntRange:
    if _is_int(low) and _is_int(high) and _is_int(q):
        return IntRange(low, high, log=log, q=q)  # type: ignore[arg-type]
    return FloatRange(low, high, log=log, q=q)


def quniform(low: float, high: float, q: float) -> FloatRange | IntRange:
    """A multiple of ``q`` drawn uniformly from those in ``[low, high]`` (both inclusive).

    Values are ints when ``low``, ``high`` and ``q`` are all ints, floats otherwise.
    """
    return _quantized(low, high, q, log=False)


def qloguniform(low: float, high: float, q: float) -> FloatRange | IntRange:
    """A log-uniform draw from ``[low, high]`` rounded to the nearest multiple of ``q`` in range.

    Both bounds are inclusive and ``low > 0``. Values are ints when ``low``, ``high`` and ``q``
    are all ints, floats otherwise.
    """
    return _quantized(low, high, q, log=True)


def randint(low: int, high: int, *, log: bool = False) -> IntRange:
    """An integer from ``[low, high]`` — BOTH bounds inclusive (unlike Ray's ``randint``).

    Args:
        low: Lower bound (inclusive); ``low >= 1`` with ``log``.
        high: Upper bound (inclusive), ``low <= high``.
        log: Draw uniformly in log space (batch sizes, widths): each integer ``v`` has a weight
            of ``log((v + 1) / v)``, so ``[1, 2)``, ``[2, 4)``, ``[4, 8)``, ... are equally
            likely. Without it every integer is equally likely.
    """
    return IntRange(low, high, log=log)


def choice(options: Sequence[Any] | Mapping[str, Mapping[str, Any]]) -> Choice | Conditional:
    """One of ``options``, drawn uniformly.

    A list gives a plain choice. A mapping of option name -> sub-space gives a conditional
    choice whose value is ``{"name": <option name>, **<values of that branch>}``.
    """
    if isinstance(options, Mapping):
        return Conditional(options)
    return Choice(tuple(options) if isinstance(options, (list, tuple)) else options)  # type: ignore[arg-type]


def grid(options: Sequence[Any]) -> Choice:
    """Every one of ``options`` is tried (grid search) where the backend can; else a choice."""
    return Choice(tuple(options) if isinstance(options, (list, tuple)) else options, grid=True)  # type: ignore[arg-type]


# --- numeric helpers shared by sampling, validation and decoding -----------------------------


def multiple(k: int, q: float) -> float | int:
    """Returns ``k * q`` without float noise (``3 * 0.1 == 0.3``)."""
    if _is_int(q):
        return k * int(q)
    return float(Decimal(k) * _dec(q))


def quantize(value: float, rng: FloatRange | IntRange) -> float | int:
    """Snaps ``value`` to the nearest multiple of ``rng.q`` and steps it into range.

    Raises:
        SpecError: If the value is more than one step outside the range.
    """
    q = rng.q
    assert q is not None
    k_lo, k_hi = _multiple_indices(rng.low, rng.high, q)
    k = round(float(value) / q)
    if k < k_lo - 1 or k > k_hi + 1:
        raise SpecError(f"value {value!r} lies outside [{rng.low}, {rng.high}].")
    return _kth(min(max(k, k_lo), k_hi), rng)


def _kth(k: int, rng: FloatRange | IntRange) -> float | int:
    assert rng.q is not None
    value = multiple(k, rng.q)
    return int(value) if isinstance(rng, IntRange) else float(value)


def is_log_int(param: object) -> bool:
    """Whether ``param`` is a log integer range: ``randint(low, high, log=True)``."""
    return isinstance(param, IntRange) and param.log and param.q == 1


def sample_range(rng: FloatRange | IntRange, gen: random.Random) -> float | int:
    """Draws one value of a range."""
    if is_log_int(rng):
        # Ray's lograndint: floor of a log-uniform draw from [low, high + 1).
        drawn = math.floor(math.exp(gen.uniform(math.log(rng.low), math.log(rng.high + 1))))
        return int(min(max(drawn, rng.low), rng.high))
    if rng.log:
        value = math.exp(gen.uniform(math.log(rng.low), math.log(rng.high)))
        value = min(max(value, rng.low), rng.high)
        if rng.q is None:
            return value
        return quantize(value, rng)
    if rng.q is None:
        return min(max(gen.uniform(rng.low, rng.high), rng.low), rng.high)
    k_lo, k_hi = _multiple_indices(rng.low, rng.high, rng.q)
    return _kth(gen.randint(k_lo, k_hi), rng)


def check_range_value(rng: FloatRange | IntRange, value: Any) -> None:
    """Raises SpecError (without a path) unless ``value`` is a value of ``rng``."""
    if isinstance(rng, IntRange):
        if not _is_int(value):
            raise SpecError(f"the value must be an integer, but got {value!r}.")
    elif not is_number(value):
        raise SpecError(f"the value must be a number, but got {value!r}.")
    if not rng.low <= value <= rng.high:
        raise SpecError(
            f"`low <= value <= high` must hold, but got "
            f"(low={rng.low}, value={value!r}, high={rng.high})."
        )
    if rng.q is not None and rng.q != 1:
        k = round(value / rng.q)
        if not math.isclose(value, multiple(k, rng.q), rel_tol=1e-9, abs_tol=1e-12):
            raise SpecError(f"the value must be a multiple of q={rng.q}, but got {value!r}.")


def describe_param(param: Param) -> str:
    """A one-line human description, e.g. ``"loguniform [0.0001, 0.1]"``."""
    if isinstance(param, (FloatRange, IntRange)):
        if isinstance(param, IntRange) and param.q == 1:
            return f"randint [{param.low}, {param.high}]" + (" log" if param.log else "")
        kind = "loguniform" if param.log else "uniform"
        if param.q is None:
            return f"{kind} [{param.low}, {param.high}]"
        return f"q{kind} [{param.low}, {param.high}] q={param.q}"
    if isinstance(param, Choice):
        kind = "grid" if param.grid else "choice"
        return f"{kind} {thaw(param.options)!r}"
    return "choice of " + " | ".join(param.branches)
