"""Every Ray private that sweeplab uses still exists, with the parameters sweeplab passes.

A Ray upgrade that moves one of them fails here, in seconds, instead of in a sweep. The rows
come from `sweeplab.raycompat.PRIVATE_USES`, the rows of the package's modules;
docs/upgrading-ray.md says what to do.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from sweeplab import keys, raycompat
from sweeplab.raycompat import PRIVATE_USES, PrivateUse

PACKAGE = Path(raycompat.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))
SWEEPLAB = PACKAGE.parent


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


@pytest.mark.parametrize("use", PRIVATE_USES, ids=lambda use: f"{use.module}:{use.attribute}")
def test_every_row_says_whether_a_feature_needs_it(use: PrivateUse) -> None:
    # "speed" rows are the ones an upgrade may drop rather than port (docs/upgrading-ray.md).
    assert use.purpose in ("essential", "speed")
    assert use.feature.strip()


def _moved(module: str, attribute: str, params: tuple[str, ...] | None, why: str) -> PrivateUse:
    return PrivateUse(module, attribute, params, why, purpose="essential", feature="-")


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        (
            _moved("ray._no_such_module", "anything", None, "-"),
            "ray._no_such_module: cannot be imported",
        ),
        (
            _moved("ray.tune.schedulers", "PopulationBasedTraining._no_such_method", (), "-"),
            "PopulationBasedTraining._no_such_method: no longer exists",
        ),
        (
            _moved("ray.tune.search.optuna", "OptunaSearch._no_such_field", None, "-"),
            "OptunaSearch._no_such_field: no longer exists",
        ),
        (
            _moved("ray.tune.schedulers", "NoSuchScheduler._exploit", (), "-"),
            "has no 'NoSuchScheduler'",
        ),
        (
            _moved(
                "ray.tune.schedulers",
                "PopulationBasedTraining._exploit",
                ("tune_controller", "trial", "donor_trial"),
                "-",
            ),
            "lost parameter(s) ['donor_trial']",
        ),
        (
            _moved("ray.core.generated.gcs_pb2", "PlacementGroupTableData.REMOVED", (), "-"),
            "is no longer callable",
        ),
    ],
    ids=["module", "method", "instance-attribute", "class", "parameter", "not-callable"],
)
def test_a_moved_private_is_reported(use: PrivateUse, expected: str) -> None:
    (problem,) = problems_of(use)
    assert expected in problem


# MLflow documents `mlflow`, `mlflow.client`, `mlflow.entities` and the REST API, not these.
MLFLOW_INTERNALS = ("mlflow.utils", "mlflow.store", "mlflow.server", "mlflow.tracking._")


def _private_imports(source: str, *, with_rows: bool = False) -> set[tuple[str, str]]:
    """(module, name) of each `from ... import name` of a Ray or MLflow private in `source`.

    With `with_rows`, also each import of a public class whose private members have a row.
    """
    imported = set(re.findall(r"from ((?:ray|mlflow)\S*) import (\w+)", source))
    rows = (
        {(use.module, use.attribute.split(".")[0]) for use in PRIVATE_USES} if with_rows else set()
    )
    # A row's symbol itself (not a member of a public class) is private wherever it is imported.
    symbols = {(use.module, use.attribute) for use in PRIVATE_USES if "." not in use.attribute}
    return {
        (module, name)
        for module, name in imported
        if "._" in module
        or name.startswith("_")
        or module.startswith(MLFLOW_INTERNALS)
        or (module, name) in symbols
        or (module, name) in rows
    }


def _private_imports_without_a_row(source: str, uses: tuple[PrivateUse, ...]) -> set[Any]:
    rows = {(use.module, use.attribute.split(".")[0]) for use in uses}
    return _private_imports(source, with_rows=True) - rows


def test_every_private_import_of_the_package_has_a_row() -> None:
    """An import of a private Ray module in `raycompat` without a row would go unchecked."""
    source = "".join(module.read_text() for module in MODULES)
    assert _private_imports_without_a_row(source, PRIVATE_USES) == set()


def test_raycompat_is_one_package() -> None:
    """STYLE.md rule 9: one place, a package of modules side by side, no subpackage."""
    assert PACKAGE.name == "raycompat"
    assert not (SWEEPLAB / "raycompat.py").exists()
    assert [path for path in PACKAGE.iterdir() if (path / "__init__.py").exists()] == []


@pytest.mark.parametrize("name", raycompat.__all__)
def test_every_exported_name_is_there(name: str) -> None:
    assert getattr(raycompat, name) is not None


def test_no_module_outside_raycompat_imports_a_private() -> None:
    """STYLE.md rule 9: one module owns every use of another library's private API."""
    outside = {
        f"{file.relative_to(SWEEPLAB)}: {module}.{name}"
        for file in sorted(SWEEPLAB.rglob("*.py"))
        if PACKAGE not in file.parents
        for module, name in _private_imports(file.read_text())
    }
    assert outside == set()


def test_a_private_import_is_found() -> None:
    source = (
        "from mlflow.utils.uri import append_to_uri_path\nfrom ray.tune import Tuner\n"
        "from ray.train.v2._internal.callbacks.datasets import DatasetsCallback\n"
    )
    assert _private_imports(source) == {
        ("mlflow.utils.uri", "append_to_uri_path"),
        ("ray.train.v2._internal.callbacks.datasets", "DatasetsCallback"),
    }


def _elsewhere_in_sweeplab(name: str) -> bool:
    """Whether the imported `name` is a module of sweeplab outside `raycompat`, or relative."""
    inside = name == "sweeplab.raycompat" or name.startswith("sweeplab.raycompat.")
    return name.startswith(".") or (name.split(".")[0] == "sweeplab" and not inside)


def test_raycompat_imports_nothing_else_of_sweeplab() -> None:
    """`raycompat` is on the ground floor: every other layer may use it, it uses none."""
    outside = []
    for module in MODULES:
        for node in ast.walk(ast.parse(module.read_text(), str(module))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{'.' * node.level}{node.module or ''}"]
            else:
                continue
            outside += [
                f"{module.name}:{node.lineno}: {name}"
                for name in names
                if _elsewhere_in_sweeplab(name)
            ]
    assert outside == []


def test_the_duplicate_result_key_is_tunes() -> None:
    from ray.tune.result import RESULT_DUPLICATE

    assert keys.TUNE_DUPLICATE_RESULT_KEY == RESULT_DUPLICATE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the rows are Linux functions")
@pytest.mark.parametrize("use", raycompat.LIBC_USES, ids=lambda use: use.function)
def test_each_c_library_function_is_there(use: raycompat.LibcUse) -> None:
    assert use.why.strip()
    assert callable(raycompat.libc_function(use.function)), use.why


def test_a_c_library_function_must_be_a_row() -> None:
    with pytest.raises(ValueError, match="not a row of LIBC_USES"):
        raycompat.libc_function("system")


def test_no_module_outside_raycompat_calls_the_c_library() -> None:
    """The C library's functions are reached from raycompat too (`LIBC_USES`)."""
    outside = []
    for file in sorted(SWEEPLAB.rglob("*.py")):
        if PACKAGE in file.parents:
            continue
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name.split(".")[0] == "ctypes" for name in names):
                outside.append(str(file.relative_to(SWEEPLAB)))
    assert outside == []


def test_new_trials_are_those_after_the_ones_seen() -> None:
    new = raycompat.NewTrials()
    trials = ["a", "b"]
    assert new.since_last(trials) == ["a", "b"]
    trials.append("c")
    assert new.since_last(trials) == ["c"]
    assert new.since_last(trials) == []
