"""The one walk over a space's tree that sampling, validation and every backend share.

A tree holds nested groups (mappings), ranges, choices, conditional choices and constants. A walk
subclasses :class:`SpaceWalk` and overrides a handler per kind of node; the walk dispatches on the
kind and keeps the path, so the path rule is written once: names join with ``sep``, and a
conditional's branch carries the option name (``optimizer.sgd.momentum``, or
``optimizer/sgd/momentum`` for the backends that name parameters with '/').
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sweeplab.space._primitives import Choice, Conditional, FloatRange, IntRange

__all__ = ["SpaceWalk", "split_option"]


def split_option(value: Any) -> tuple[Any, dict[str, Any]]:
    """A conditional's value in final shape -> ``(option name, the branch's values)``.

    A value that is not a mapping reads as an option name with an empty branch.
    """
    if not isinstance(value, Mapping):
        return value, {}
    return value.get("name"), {k: v for k, v in value.items() if k != "name"}


class SpaceWalk:
    """A walk over a parameter tree: one handler per kind of node.

    Every handler gets the node, its path and ``value``: what the walk carries alongside the
    space at that path (the value of a config being decoded, checked or encoded), or ``None``
    when it walks the space alone. Handlers that are not overridden return ``None``, except
    :meth:`group` and :meth:`conditional`, which walk their children.
    """

    sep = "."
    """Joins the names of a path."""

    def join(self, path: str, name: str) -> str:
        """The path of ``name`` inside the node at ``path``."""
        return f"{path}{self.sep}{name}" if path else name

    def walk(self, node: Any, path: str = "", value: Any = None) -> Any:
        """Calls the handler of ``node``'s kind."""
        if isinstance(node, Mapping):
            return self.group(node, path, value)
        if isinstance(node, (FloatRange, IntRange)):
            return self.range(node, path, value)
        if isinstance(node, Choice):
            return self.choice(node, path, value)
        if isinstance(node, Conditional):
            return self.conditional(node, path, value)
        return self.constant(node, path, value)

    def group(self, tree: Mapping[str, Any], path: str, value: Any) -> Any:
        """A nested group: a dict of each child's result, walked with ``value``'s entry."""
        return {
            name: self.walk(node, self.join(path, name), None if value is None else value[name])
            for name, node in tree.items()
        }

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        """A float or integer range."""
        return None

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        """A plain choice (or grid)."""
        return None

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        """A conditional choice: by default every branch walked, as ``{option: result}``."""
        return {option: self.branch(param, option, path) for option in param.branches}

    def constant(self, node: Any, path: str, value: Any) -> Any:
        """A constant (frozen: lists are tuples)."""
        return None

    def branch(self, param: Conditional, option: str, path: str, value: Any = None) -> Any:
        """Walks the branch of ``option`` of the conditional at ``path`` as a group."""
        return self.group(param.branches[option], self.join(path, option), value)

    def chosen(self, param: Conditional, option: str, path: str, value: Any = None) -> Any:
        """The final shape of a conditional: ``{"name": option, **<the branch's result>}``."""
        return {"name": option, **self.branch(param, option, path, value)}
