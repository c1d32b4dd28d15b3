"""The dict/YAML/JSON form of a space.

A parameter is a mapping with exactly one key that names the primitive::

    lr: {loguniform: [1.0e-4, 1.0e-1]}
    batch_size: {choice: [16, 32, 64]}
    optimizer: {choice: {sgd: {momentum: {uniform: [0.0, 0.99]}}, adam: {}}}
    width: {randint: {low: 16, high: 512, log: true}}

The tag names (``uniform``, ``loguniform``, ``quniform``, ``qloguniform``, ``randint``,
``choice``, ``grid``) are reserved in that position: a one-key mapping whose key is a tag is always
read as that primitive, and :class:`Space` rejects a nested group that would read back that way.
Any other mapping is a nested group of parameters; anything else is a constant.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.space._primitives import (
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    choice,
    grid,
    loguniform,
    qloguniform,
    quniform,
    randint,
    thaw,
    uniform,
)
from sweeplab.space._walk import SpaceWalk

__all__ = ["TAGS", "load_space", "space_from_dict", "space_to_dict"]

_RANGE_ARGS: dict[str, tuple[str, ...]] = {
    "uniform": ("low", "high"),
    "loguniform": ("low", "high"),
    "quniform": ("low", "high", "q"),
    "qloguniform": ("low", "high", "q"),
    "randint": ("low", "high"),
}
_RANGE_BUILDERS: dict[str, Any] = {
    "uniform": uniform,
    "loguniform": loguniform,
    "quniform": quniform,
    "qloguniform": qloguniform,
    "randint": randint,
}
# Optional keyword arguments, taken in a tag's mapping form only.
_RANGE_FLAGS: dict[str, tuple[str, ...]] = {"randint": ("log",)}
TAGS = frozenset([*_RANGE_ARGS, "choice", "grid"])


def is_tagged(value: object) -> bool:
    """Whether ``value`` is a mapping that the dict form reads as a primitive."""
    return isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in TAGS


class _ToDict(SpaceWalk):
    """The dict form of each node."""

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        if isinstance(param, IntRange):
            if param.q == 1 and param.log:
                return {"randint": {"low": param.low, "high": param.high, "log": True}}
            if param.q == 1:
                return {"randint": [param.low, param.high]}
            return {"qloguniform" if param.log else "quniform": [param.low, param.high, param.q]}
        kind = "loguniform" if param.log else "uniform"
        if param.q is None:
            return {kind: [param.low, param.high]}
        return {f"q{kind}": [param.low, param.high, param.q]}

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        return {"grid" if param.grid else "choice": thaw(param.options)}

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        return {"choice": super().conditional(param, path, value)}

    def constant(self, node: Any, path: str, value: Any) -> Any:
        return thaw(node)


def space_to_dict(space: Any) -> dict[str, Any]:
    """Returns the dict form of a :class:`~sweeplab.space.Space`."""
    return _ToDict().walk(space.params)


def _range_args(tag: str, args: Any, where: str) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of a range tag's builder."""
    names, flags = _RANGE_ARGS[tag], _RANGE_FLAGS.get(tag, ())
    if isinstance(args, Mapping):
        if not set(names) <= set(args) <= {*names, *flags}:
            optional = f" (and optionally {list(flags)})" if flags else ""
            raise SpecError(
                f"{where}: {tag} takes the keys {list(names)}{optional}, but got {list(args)}."
            )
        return [args[name] for name in names], {k: args[k] for k in flags if k in args}
    if not isinstance(args, (list, tuple)) or len(args) != len(names):
        raise SpecError(f"{where}: {tag} takes a list {list(names)}, but got {args!r}.")
    return list(args), {}


def _param_from_dict(value: Any, where: str) -> Any:
    if not isinstance(value, Mapping):
        return value
    if not is_tagged(value):
        return _tree_from_dict(value, where)
    ((tag, args),) = value.items()
    try:
        if tag in _RANGE_ARGS:
            positional, keywords = _range_args(tag, args, where)
            return _RANGE_BUILDERS[tag](*positional, **keywords)
        if tag == "choice" and isinstance(args, Mapping):
            branches = {}
            for option, branch in args.items():
                branch = {} if branch is None else branch
                if not isinstance(branch, Mapping):
                    raise SpecError(
                        f"the sub-space of option {option!r} must be a mapping of parameters, "
                        f"but got {branch!r}."
                    )
                branches[option] = _tree_from_dict(branch, f"{where}.{option}")
            return choice(branches)
        if not isinstance(args, list):
            raise SpecError(f"{tag} takes a list of options, but got {args!r}.")
        return choice(args) if tag == "choice" else grid(args)
    except SpecError as error:
        message = str(error)
        raise SpecError(message if message.startswith(where) else f"{where}: {message}") from None


def _tree_from_dict(data: Mapping[Any, Any], path: str) -> dict[Any, Any]:
    return {
        name: _param_from_dict(value, f"{path}.{name}" if path else str(name))
        for name, value in data.items()
    }


def space_from_dict(data: Any) -> Any:
    """Builds a :class:`~sweeplab.space.Space` from its dict form."""
    from sweeplab.space._space import Space

    if not isinstance(data, Mapping):
        raise SpecError(f"a space must be a mapping of parameters, but got {data!r}.")
    return Space(_tree_from_dict(data, ""))


def load_space(path: str | Path) -> Any:
    """Loads a space from a ``.yaml``/``.yml`` or ``.json`` file.

    Raises:
        SpecError: If the file is missing, has another suffix, or holds an invalid space; the
            message starts with the file name.
    """
    from sweeplab.space._space import Space

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in {".yaml", ".yml", ".json"}:
        raise SpecError(f"{path}: a space file must end in .yaml, .yml or .json.")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"{path}: cannot read the space file: {error.strerror}.") from None
    try:
        return Space.from_json(text) if suffix == ".json" else Space.from_yaml(text)
    except SpecError as error:
        raise SpecError(f"{path}: {error}") from None
