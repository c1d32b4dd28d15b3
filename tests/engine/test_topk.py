"""The top-k checkpoint folders a trial keeps on disk, in process and on a warm slot alike."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sweeplab.engine._topk import METRICS_FILE, TopKCheckpoints

_MISSING = object()  # a report without the metric


def _add_all(tmp_path: Path, *, mode: str, keep: int, values: list[Any]) -> set[int]:
    """Adds one checkpoint folder per value; returns the indexes of the folders left on disk."""
    checkpoints = TopKCheckpoints(metric="loss", mode=mode, keep=keep)
    folders = [tmp_path / f"checkpoint_{i:06d}" for i in range(len(values))]
    for folder, value in zip(folders, values, strict=True):
        folder.mkdir()
        (folder / "model.pt").write_text("weights")
        metrics = {"step": folder.name} if value is _MISSING else {"loss": value}
        checkpoints.add(folder, metrics)
    return {i for i, folder in enumerate(folders) if folder.exists()}


@pytest.mark.parametrize(
    ("mode", "keep", "values", "left"),
    [
        # The best `keep` by mode, plus the latest.
        ("min", 1, [3.0, 1.0, 2.0], {1, 2}),
        ("max", 1, [3.0, 1.0, 2.0], {0, 2}),
        ("min", 2, [5.0, 4.0, 3.0, 2.0, 1.0], {3, 4}),
        ("max", 2, [5.0, 4.0, 3.0, 2.0, 1.0], {0, 1, 4}),
        ("min", 3, [1.0, 2.0], {0, 1}),
        ("max", 1, [1, 2, True], {1, 2}),  # ints and bools are numbers
        # The latest is kept even when nothing else is.
        ("min", 0, [1.0, 2.0, 3.0], {2}),
        # Equal scores keep the earlier checkpoint.
        ("max", 1, [1.0, 1.0, 1.0], {0, 2}),
        ("min", 2, [1.0, 1.0, 1.0, 1.0], {0, 1, 3}),
        # NaN ranks last in both modes.
        ("min", 1, [math.nan, 5.0, math.nan], {1, 2}),
        ("max", 1, [math.nan, -5.0, math.nan], {1, 2}),
        # A missing or non-numeric metric ranks last with "max" and first with "min".
        ("max", 1, [_MISSING, 5.0, 3.0], {1, 2}),
        ("max", 1, ["n/a", 5.0, 3.0], {1, 2}),
        ("min", 1, [_MISSING, 5.0, 3.0], {0, 2}),
        ("min", 1, ["n/a", 5.0, 3.0], {0, 2}),
    ],
)
def test_keeps_the_best_k_and_the_latest(
    tmp_path: Path, mode: str, keep: int, values: list[Any], left: set[int]
) -> None:
    assert _add_all(tmp_path, mode=mode, keep=keep, values=values) == left


def test_each_kept_folder_holds_its_report(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoint_000000"
    folder.mkdir()
    TopKCheckpoints(metric="loss", mode="min", keep=1).add(
        str(folder), {"loss": 0.5, "path": tmp_path}
    )
    assert json.loads((folder / METRICS_FILE).read_text()) == {"loss": 0.5, "path": str(tmp_path)}
