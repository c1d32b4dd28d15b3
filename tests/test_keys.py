"""`sweeplab.keys` is the one place the result keys and MLflow tag names are spelled."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from sweeplab import keys

PACKAGE = Path(keys.__file__).parent
# The packages that write or read the names: each takes them from `sweeplab.keys`.
READERS = ("engine", "tracking", "report")
# Result keys, tag names and the tag prefix; role and status values are plain words that other
# code spells for other reasons.
NAMES = {
    name: getattr(keys, name)
    for name in keys.__all__
    if name.endswith(("_KEY", "_TAG")) or name == "TAG_PREFIX"
}


def test_keys_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(keys.__file__).read_text(encoding="utf-8"))
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ] + [node.module or "." for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [m for m in imported if m.split(".")[0] not in sys.stdlib_module_names] == []


def test_each_name_is_spelled_once() -> None:
    values = list(NAMES.values())
    assert len(set(values)) == len(values)
    tags = [value for name, value in NAMES.items() if name.endswith("_TAG")]
    assert all(tag.startswith(keys.TAG_PREFIX) for tag in tags)


def test_no_module_spells_a_name_itself() -> None:
    spelled = {value: name for name, value in NAMES.items()}
    found = []
    for package in READERS:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and node.value in spelled:
                    where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                    found.append(f"{where} spells {spelled[node.value]}")
    assert found == []
