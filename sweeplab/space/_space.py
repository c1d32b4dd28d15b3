"""The :class:`Space`: a validated, immutable tree of parameters and constants."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.space._primitives import (
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    check_name,
    check_range_value,
    describe_param,
    freeze,
    same_value,
    sample_range,
    thaw,
)

__all__ = ["Space", "flatten_config"]

_PARAM_TYPES = (FloatRange, IntRange, Choice, Conditional)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _at(path: str, error: SpecError) -> SpecError:
    return SpecError(f"{path}: {error}" if path else str(error))


def _normalize(tree: Mapping[Any, Any], path: str, *, in_branch: bool) -> dict[str, Any]:
    """Validates a parameter tree and returns it with constants frozen (lists -> tuples)."""
    out: dict[str, Any] = {}
    for name, value in tree.items():
        where = _join(path, str(name) if name != "" else repr(name))
        try:
            check_name(name)
        except SpecError as error:
            raise _at(where, error) from None
        if in_branch and name == "name":
            raise SpecError(
                f"{where}: 'name' is reserved inside a conditional branch (it holds the chosen "
                f"option's name)."
            )
        out[name] = _normalize_value(value, where)
    return out


def _normalize_value(value: Any, where: str) -> Any:
    if isinstance(value, Conditional):
        branches = {}
        for option, branch in value.branches.items():
            sub = _normalize(branch, _join(where, option), in_branch=True)
            for sub_path, param in _walk(sub, _join(where, option)):
                if isinstance(param, Choice) and param.grid:
                    raise SpecError(
                        f"{sub_path}: a grid cannot sit inside a conditional branch (the branch "
                        f"is only sampled when chosen); use choice instead."
                    )
            branches[option] = sub
        return Conditional(branches)
    if isinstance(value, _PARAM_TYPES):
        return value
    if isinstance(value, Mapping):
        from sweeplab.space._serialize import is_tagged

        if is_tagged(value):
            raise SpecError(
                f"{where}: a group whose only key is {next(iter(value))!r} would read back from "
                f"YAML/JSON as that primitive; rename the key or add another one."
            )
        return _normalize(value, where, in_branch=False)
    try:
        return freeze(value)
    except SpecError as error:
        raise _at(where, error) from None


def _walk(tree: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    """Yields ``(dotted path, leaf)`` for every parameter and constant, depth first.

    Conditional branches are walked with the option name in the path
    (``optimizer.sgd.momentum``); nested dicts are descended into, not yielded.
    """
    for name, value in tree.items():
        where = _join(path, name)
        if isinstance(value, dict):
            yield from _walk(value, where)
            continue
        yield where, value
        if isinstance(value, Conditional):
            for option, branch in value.branches.items():
                yield from _walk(branch, _join(where, option))


def _sample_tree(tree: Mapping[str, Any], gen: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in tree.items():
        out[name] = _sample_value(value, gen)
    return out


def _sample_value(value: Any, gen: random.Random) -> Any:
    if isinstance(value, dict):
        return _sample_tree(value, gen)
    if isinstance(value, (FloatRange, IntRange)):
        return sample_range(value, gen)
    if isinstance(value, Choice):
        return thaw(value.options[gen.randrange(len(value.options))])
    if isinstance(value, Conditional):
        option = gen.choice(list(value.branches))
        return {"name": option, **_sample_tree(value.branches[option], gen)}
    return thaw(value)


def _check_tree(tree: Mapping[str, Any], config: Any, path: str) -> None:
    if not isinstance(config, Mapping):
        raise SpecError(f"{path or '<config>'}: expected a mapping, but got {config!r}.")
    expected, got = set(tree), set(config)
    if expected != got:
        missing, extra = sorted(expected - got), sorted(map(str, got - expected))
        raise SpecError(
            f"{path or '<config>'}: the keys must be those of the space, but "
            f"missing={missing} and unexpected={extra}."
        )
    for name, value in tree.items():
        _check_value(value, config[name], _join(path, name))


def _check_value(param: Any, value: Any, where: str) -> None:
    if isinstance(param, dict):
        _check_tree(param, value, where)
    elif isinstance(param, (FloatRange, IntRange)):
        try:
            check_range_value(param, value)
        except SpecError as error:
            raise _at(where, error) from None
    elif isinstance(param, Choice):
        if param.find(value) is None:
            raise SpecError(
                f"{where}: the value must be one of {thaw(param.options)!r}, but got {value!r}."
            )
    elif isinstance(param, Conditional):
        if not isinstance(value, Mapping) or value.get("name") not in param.branches:
            raise SpecError(
                f"{where}: the value must be a mapping whose 'name' is one of "
                f"{list(param.branches)}, but got {value!r}."
            )
        option = value["name"]
        rest = {k: v for k, v in value.items() if k != "name"}
        _check_tree(param.branches[option], rest, _join(where, option))
    else:
        try:
            ok = same_value(param, freeze(value))
        except SpecError:
            ok = False
        if not ok:
            raise SpecError(f"{where}: the constant must be {thaw(param)!r}, but got {value!r}.")


class Space:
    """An immutable, validated search space: a nested mapping of parameters and constants.

    Leaves are primitives (:func:`uniform`, :func:`choice`, ...) or constants (None, bools,
    finite numbers, strings and lists of these), which pass through to every config unchanged.
    Nested mappings stay nested in the sampled configs.

    Args:
        params: Parameter name -> primitive, constant or nested mapping; or another Space.

    Raises:
        SpecError: If any part breaks a rule; the message starts with the dotted parameter path.
    """

    __slots__ = ("_tree",)

    def __init__(self, params: Mapping[str, Any] | Space) -> None:
        if isinstance(params, Space):
            self._tree: dict[str, Any] = params._tree
            return
        if not isinstance(params, Mapping):
            raise SpecError(f"a space must be a mapping of parameters, but got {params!r}.")
        self._tree = _normalize(params, "", in_branch=False)

    @property
    def params(self) -> Mapping[str, Any]:
        """The parameter tree (read-only at the top level; constants' lists are tuples)."""
        return MappingProxyType(self._tree)

    @property
    def grid_size(self) -> int:
        """The number of grid points: the product of the grid options' counts (1 if none)."""
        size = 1
        for _, leaf in _walk(self._tree):
            if isinstance(leaf, Choice) and leaf.grid:
                size *= len(leaf.options)
        return size

    @property
    def dimensions(self) -> int:
        """The number of parameters: every primitive, those of every branch included."""
        return sum(isinstance(leaf, _PARAM_TYPES) for _, leaf in _walk(self._tree))

    def sample(self, seed: int | None = None, n: int = 1) -> list[dict[str, Any]]:
        """Draws ``n`` configs in their final nested shape; the same seed gives the same configs.

        Grid parameters are drawn like a :func:`choice` here.
        """
        gen = random.Random(seed)
        return [_sample_tree(self._tree, gen) for _ in range(n)]

    def sample_one(self, gen: random.Random) -> dict[str, Any]:
        """Draws one config with a caller-owned random generator."""
        return _sample_tree(self._tree, gen)

    def validate_config(self, config: Mapping[str, Any]) -> None:
        """Raises SpecError unless ``config`` could have been drawn from this space.

        The config must be in final shape: exactly the space's keys, values within bounds and
        on their quantization grid, options among the choices, conditional values holding
        ``name`` plus exactly that branch's keys.
        """
        _check_tree(self._tree, config, "")

    def describe(self) -> list[tuple[str, str]]:
        """Returns ``(dotted path, description)`` for every parameter and constant.

        Branch parameters carry the option name in their path: ``optimizer.sgd.momentum``.
        """
        rows = []
        for path, leaf in _walk(self._tree):
            if isinstance(leaf, _PARAM_TYPES):
                rows.append((path, describe_param(leaf)))
            else:
                rows.append((path, f"constant {thaw(leaf)!r}"))
        return rows

    def to_dict(self) -> dict[str, Any]:
        """Returns the JSON/YAML-ready form read by :meth:`from_dict`."""
        from sweeplab.space._serialize import space_to_dict

        return space_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Space:
        """Builds a space from the form written by :meth:`to_dict` (see docs/search_spaces.md)."""
        from sweeplab.space._serialize import space_from_dict

        return space_from_dict(data)

    def to_yaml(self) -> str:
        """Returns the YAML text read by :meth:`from_yaml`."""
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)

    @classmethod
    def from_yaml(cls, text: str) -> Space:
        """Builds a space from YAML text."""
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise SpecError(f"the space is not valid YAML: {error}") from None
        return cls.from_dict(data if data is not None else {})

    def to_json(self) -> str:
        """Returns the JSON text read by :meth:`from_json`."""
        import json

        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Space:
        """Builds a space from JSON text."""
        import json

        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise SpecError(f"the space is not valid JSON: {error}") from None
        return cls.from_dict(data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Space):
            return NotImplemented
        return self._tree == other._tree

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Space({self._tree!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"tree": self._tree}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._tree = state["tree"]


def flatten_config(config: Mapping[str, Any], *, sep: str = ".") -> dict[str, Any]:
    """Flattens nested mappings to dotted keys, e.g. ``{"optimizer.name": "sgd", ...}``.

    Lists and other values are kept as they are.
    """
    out: dict[str, Any] = {}

    def visit(node: Mapping[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{sep}{key}" if prefix else str(key)
            if isinstance(value, Mapping) and value:
                visit(value, path)
            else:
                out[path] = value

    visit(config, "")
    return out
