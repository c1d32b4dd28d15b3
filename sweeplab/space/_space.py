"""The :class:`Space`: a validated, immutable tree of parameters and constants."""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.space._primitives import (
    PARAM_TYPES,
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
from sweeplab.space._walk import SpaceWalk, split_option

__all__ = ["Space", "flatten_config"]


def _at(path: str, error: SpecError) -> SpecError:
    return SpecError(f"{path}: {error}" if path else str(error))


class _Normalize(SpaceWalk):
    """Validates a parameter tree and returns it with constants frozen (lists -> tuples).

    ``value`` is true for the group of a conditional's branch.
    """

    def walk(self, node: Any, path: str = "", value: Any = None) -> Any:
        if isinstance(node, Mapping):
            from sweeplab.space._serialize import is_tagged

            if is_tagged(node):
                raise SpecError(
                    f"{path}: a group whose only key is {next(iter(node))!r} would read back from "
                    f"YAML/JSON as that primitive; rename the key or add another one."
                )
        return super().walk(node, path, value)

    def group(self, tree: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, node in tree.items():
            where = self.join(path, str(name) if name != "" else repr(name))
            try:
                check_name(name)
            except SpecError as error:
                raise _at(where, error) from None
            if value and name == "name":
                raise SpecError(
                    f"{where}: 'name' is reserved inside a conditional branch (it holds the "
                    f"chosen option's name)."
                )
            out[name] = self.walk(node, where, False)
        return out

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        return param

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        return param

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        branches = {}
        for option in param.branches:
            sub = self.branch(param, option, path, True)
            for sub_path, node in _leaves(sub, self.join(path, option)):
                if isinstance(node, Choice) and node.grid:
                    raise SpecError(
                        f"{sub_path}: a grid cannot sit inside a conditional branch (the branch "
                        f"is only sampled when chosen); use choice instead."
                    )
            branches[option] = sub
        return Conditional(branches)

    def constant(self, node: Any, path: str, value: Any) -> Any:
        try:
            return freeze(node)
        except SpecError as error:
            raise _at(path, error) from None


class _Leaves(SpaceWalk):
    """Collects ``(dotted path, leaf)`` for every parameter and constant, depth first.

    Conditional branches are walked with the option name in the path
    (``optimizer.sgd.momentum``); nested groups are descended into, not collected.
    """

    def __init__(self) -> None:
        self.found: list[tuple[str, Any]] = []

    def walk(self, node: Any, path: str = "", value: Any = None) -> Any:
        if not isinstance(node, Mapping):
            self.found.append((path, node))
        return super().walk(node, path, value)


def _leaves(tree: Mapping[str, Any], path: str = "") -> list[tuple[str, Any]]:
    leaves = _Leaves()
    leaves.group(tree, path, None)
    return leaves.found


class _Sample(SpaceWalk):
    """Draws a value of every node from ``gen``; a conditional draws its option, then its branch."""

    def __init__(self, gen: random.Random) -> None:
        self.gen = gen

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        return sample_range(param, self.gen)

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        return thaw(param.options[self.gen.randrange(len(param.options))])

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        return self.chosen(param, self.gen.choice(list(param.branches)), path)

    def constant(self, node: Any, path: str, value: Any) -> Any:
        return thaw(node)


def sample_node(node: Any, gen: random.Random) -> Any:
    """Draws a value of a node of a space's tree (a group, a parameter or a constant)."""
    return _Sample(gen).walk(node)


class _Check(SpaceWalk):
    """Raises SpecError unless ``value`` could have been drawn from the node."""

    def group(self, tree: Mapping[str, Any], path: str, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise SpecError(f"{path or '<config>'}: expected a mapping, but got {value!r}.")
        expected, got = set(tree), set(value)
        if expected != got:
            missing, extra = sorted(expected - got), sorted(map(str, got - expected))
            raise SpecError(
                f"{path or '<config>'}: the keys must be those of the space, but "
                f"missing={missing} and unexpected={extra}."
            )
        super().group(tree, path, value)

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> None:
        try:
            check_range_value(param, value)
        except SpecError as error:
            raise _at(path, error) from None

    def choice(self, param: Choice, path: str, value: Any) -> None:
        if param.find(value) is None:
            raise SpecError(
                f"{path}: the value must be one of {thaw(param.options)!r}, but got {value!r}."
            )

    def conditional(self, param: Conditional, path: str, value: Any) -> None:
        option, rest = split_option(value)
        if not isinstance(value, Mapping) or option not in param.branches:
            raise SpecError(
                f"{path}: the value must be a mapping whose 'name' is one of "
                f"{list(param.branches)}, but got {value!r}."
            )
        self.branch(param, option, path, rest)

    def constant(self, node: Any, path: str, value: Any) -> None:
        try:
            ok = same_value(node, freeze(value))
        except SpecError:
            ok = False
        if not ok:
            raise SpecError(f"{path}: the constant must be {thaw(node)!r}, but got {value!r}.")


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
        self._tree = _Normalize().group(params, "", False)

    @property
    def params(self) -> Mapping[str, Any]:
        """The parameter tree (read-only at the top level; constants' lists are tuples)."""
        return MappingProxyType(self._tree)

    @property
    def grid_size(self) -> int:
        """The number of grid points: the product of the grid options' counts (1 if none)."""
        size = 1
        for _, leaf in _leaves(self._tree):
            if isinstance(leaf, Choice) and leaf.grid:
                size *= len(leaf.options)
        return size

    @property
    def dimensions(self) -> int:
        """The number of parameters: every primitive, those of every branch included."""
        return sum(isinstance(leaf, PARAM_TYPES) for _, leaf in _leaves(self._tree))

    def sample(self, seed: int | None = None, n: int = 1) -> list[dict[str, Any]]:
        """Draws ``n`` configs in their final nested shape; the same seed gives the same configs.

        Grid parameters are drawn like a :func:`choice` here.
        """
        gen = random.Random(seed)
        return [sample_node(self._tree, gen) for _ in range(n)]

    def sample_one(self, gen: random.Random) -> dict[str, Any]:
        """Draws one config with a caller-owned random generator."""
        return sample_node(self._tree, gen)

    def validate_config(self, config: Mapping[str, Any]) -> None:
        """Raises SpecError unless ``config`` could have been drawn from this space.

        The config must be in final shape: exactly the space's keys, values within bounds and
        on their quantization grid, options among the choices, conditional values holding
        ``name`` plus exactly that branch's keys.
        """
        _Check().group(self._tree, "", config)

    def describe(self) -> list[tuple[str, str]]:
        """Returns ``(dotted path, description)`` for every parameter and constant.

        Branch parameters carry the option name in their path: ``optimizer.sgd.momentum``.
        """
        rows = []
        for path, leaf in _leaves(self._tree):
            if isinstance(leaf, PARAM_TYPES):
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
