"""The import contract of pyproject.toml (`lint-imports`) holds, and fails on a violation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        # The copy's package, not the installed one, is what grimp reads.
        env={"PYTHONPATH": str(root), "PATH": str(LINT_IMPORTS.parent)},
    )


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy)
    shutil.copytree(
        ROOT / "sweeplab", copy / "sweeplab", ignore=shutil.ignore_patterns("__pycache__")
    )
    return copy


def test_the_package_keeps_its_contracts(tmp_path: Path) -> None:
    result = _lint_imports(_copy(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # A lower layer imports an upper one, even only for type hints.
        (
            "sweeplab/tracking/_ranking.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from sweeplab.engine import ResolvedSweep\n",
            "Layers",
        ),
        # Two packages of one layer stay independent.
        ("sweeplab/space/_walk.py", "import sweeplab.tracking\n", "Layers"),
        # A package reaches into another's private module.
        (
            "sweeplab/engine/_outcome.py",
            "from sweeplab.tracking._read import tracking_client\n",
            "private module",
        ),
    ],
    ids=["upward", "sideways", "private"],
)
def test_a_violation_breaks_a_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    copy = _copy(tmp_path)
    path = copy / module
    text = path.read_text()
    marker = "from __future__ import annotations\n"
    path.write_text(text.replace(marker, marker + line, 1))
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert "1 broken" in result.stdout
    broken = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken
