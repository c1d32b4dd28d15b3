"""The trial mode: decided once per sweep, in `ResolvedSweep`, and read everywhere else."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from sweeplab.engine import ResolvedSweep, TrialMode
from sweeplab.spec import Sweep

PACKAGE = Path(__file__).resolve().parents[2] / "sweeplab"


def _sweep(**kwargs: Any) -> Sweep:
    return Sweep(
        name="s", train_func=lambda config: None, space={"x": 1}, metric="m", mode="min", **kwargs
    )


@pytest.mark.parametrize(
    ("kwargs", "mode"),
    [
        ({"workers_per_trial": 1}, TrialMode.IN_PROCESS),
        ({"workers_per_trial": 1, "reuse_groups": False}, TrialMode.IN_PROCESS),
        ({"workers_per_trial": 2}, TrialMode.WARM_SLOT),
        ({"workers_per_trial": 2, "reuse_groups": False}, TrialMode.GROUP_PER_TRIAL),
        ({"workers_per_trial": (1, 2)}, TrialMode.GROUP_PER_TRIAL),
    ],
)
def test_the_trial_mode_table(kwargs: dict[str, Any], mode: TrialMode) -> None:
    assert ResolvedSweep.trial_mode_of(_sweep(**kwargs)) is mode


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"workers_per_trial": 2}, "warm-slot: 3 warm trial slot(s)"),
        ({"workers_per_trial": 1, "scheduler": "pbt"}, "in-process: each trial in a reused"),
        ({"workers_per_trial": 1}, "each trial in a reused process"),
        ({"workers_per_trial": 1, "reuse_groups": False}, "each trial in a reused process"),
        ({"workers_per_trial": 2, "reuse_groups": False}, "group-per-trial: a new trainer group"),
        ({"workers_per_trial": 2, "reuse_groups": False}, "reuse_groups=False"),
        ({"workers_per_trial": (1, 2)}, "elastic"),
    ],
)
def test_the_preview_line(kwargs: dict[str, Any], text: str) -> None:
    sweep = _sweep(**kwargs)
    line = ResolvedSweep.trial_mode_of(sweep).describe(
        workers_per_trial=sweep.workers_per_trial, concurrency=3
    )
    assert text in line


def test_the_mode_is_decided_at_one_call_site() -> None:
    """Only `ResolvedSweep.trial_mode_of` calls `TrialMode.decide`; no module reads the fields
    the decision is made from to decide it again."""
    callers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "decide"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("TrialMode", "cls")
            ):
                callers.append(path.relative_to(PACKAGE).as_posix())
    assert callers == ["engine/_resolved.py"]
