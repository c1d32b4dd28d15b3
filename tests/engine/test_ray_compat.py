"""Every Ray private that sweeplab uses still exists, with the parameters sweeplab passes.

A Ray upgrade that moves one of them fails here, in seconds, instead of in a sweep. The rows
come from `sweeplab.engine._ray_compat.PRIVATE_USES`; docs/upgrading-ray.md says what to do.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import pytest

from sweeplab.engine import _ray_compat
from sweeplab.engine._ray_compat import PRIVATE_USES, PrivateUse


def _assigned_on_instances(owner: type, name: str) -> bool:
    """Whether some class in `owner`'s MRO sets `self.<name>` in its source."""
    pattern = re.compile(rf"\bself\.{re.escape(name)}\s*(:[^=\n]+)?=[^=]")
    for klass in inspect.getmro(owner):
        if klass is object:
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):  # a compiled class: nothing to read
            continue
        if pattern.search(source):
            return True
    return False


def _has_attribute(owner: Any, name: str) -> bool:
    if hasattr(owner, name):
        return True
    if not isinstance(owner, type):
        return False
    if name in getattr(owner, "__dataclass_fields__", {}):
        return True
    descriptor = getattr(owner, "DESCRIPTOR", None)  # a protobuf message: its fields
    if name in getattr(descriptor, "fields_by_name", {}):
        return True
    return _assigned_on_instances(owner, name)


def problems_of(use: PrivateUse) -> list[str]:
    """What no longer holds of `use`: empty when Ray still has it as sweeplab uses it."""
    where = f"{use.module}.{use.attribute}"
    try:
        target: Any = importlib.import_module(use.module)
    except ImportError as exc:
        return [f"{use.module}: cannot be imported ({exc})"]
    *path, name = use.attribute.split(".")
    for part in path:
        if not hasattr(target, part):
            return [f"{where}: {use.module} has no {part!r}"]
        target = getattr(target, part)
    if not _has_attribute(target, name):
        return [f"{where}: no longer exists"]
    if use.params is None:
        return []
    member = getattr(target, name, None)
    if not callable(member):
        return [f"{where}: is no longer callable"]
    try:
        parameters = inspect.signature(member).parameters
    except (TypeError, ValueError):  # a compiled function without a signature
        return []
    takes_any_keyword = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    missing = [p for p in use.params if p not in parameters]
    if missing and not takes_any_keyword:
        return [f"{where}: lost parameter(s) {missing}; it takes {list(parameters)}"]
    return []


@pytest.mark.parametrize("use", PRIVATE_USES, ids=lambda use: f"{use.module}:{use.attribute}")
def test_ray_private_still_exists(use: PrivateUse) -> None:
    assert problems_of(use) == [], use.why


def test_every_row_says_why() -> None:
    assert len({(u.module, u.attribute) for u in PRIVATE_USES}) == len(PRIVATE_USES)
    assert all(use.why.strip() for use in PRIVATE_USES)


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        (
            PrivateUse("ray._no_such_module", "anything", None, "-"),
            "ray._no_such_module: cannot be imported",
        ),
        (
            PrivateUse("ray.tune.schedulers", "PopulationBasedTraining._no_such_method", (), "-"),
            "PopulationBasedTraining._no_such_method: no longer exists",
        ),
        (
            PrivateUse("ray.tune.search.optuna", "OptunaSearch._no_such_field", None, "-"),
            "OptunaSearch._no_such_field: no longer exists",
        ),
        (
            PrivateUse("ray.tune.schedulers", "NoSuchScheduler._exploit", (), "-"),
            "has no 'NoSuchScheduler'",
        ),
        (
            PrivateUse(
                "ray.tune.schedulers",
                "PopulationBasedTraining._exploit",
                ("tune_controller", "trial", "donor_trial"),
                "-",
            ),
            "lost parameter(s) ['donor_trial']",
        ),
        (
            PrivateUse("ray.core.generated.gcs_pb2", "PlacementGroupTableData.REMOVED", (), "-"),
            "is no longer callable",
        ),
    ],
    ids=["module", "method", "instance-attribute", "class", "parameter", "not-callable"],
)
def test_a_moved_private_is_reported(use: PrivateUse, expected: str) -> None:
    (problem,) = problems_of(use)
    assert expected in problem


def test_every_private_import_of_the_module_has_a_row() -> None:
    """An import of a private Ray module in `_ray_compat` without a row would go unchecked."""
    source = inspect.getsource(_ray_compat)
    imported = set(re.findall(r"from (ray\S*) import (\w+)", source))
    rows = {(use.module, use.attribute.split(".")[0]) for use in PRIVATE_USES}
    private = {
        (module, name)
        for module, name in imported
        if "._" in module or name.startswith("_") or (module, name) in rows
    }
    assert private - rows == set()


def test_the_duplicate_result_key_is_tunes() -> None:
    from ray.tune.result import RESULT_DUPLICATE

    assert _ray_compat.TUNE_DUPLICATE_RESULT_KEY == RESULT_DUPLICATE
