"""A trial's checkpoint folders on disk: the best few by the sweep's metric, plus the latest."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["METRICS_FILE", "TopKCheckpoints"]

# Written into each kept checkpoint folder: the report that checkpoint came with.
METRICS_FILE = ".sweeplab_metrics.json"


class TopKCheckpoints:
    """Keeps a trial's `keep` best checkpoint folders by `metric`, plus the latest one.

    Each added folder gets the report's metrics as ``.sweeplab_metrics.json``; every folder that
    falls out of the best `keep` is deleted from disk, except the latest, which a resumed or
    exploited trial continues from. The latest is kept even when `keep` is 0.

    Ranking: a NaN metric ranks last in both modes. A report whose metric is missing or not an
    `int`/`float` ranks last with ``mode="max"`` and first with ``mode="min"`` (its score is
    negated like any other). Equal scores keep the earlier checkpoint.
    """

    def __init__(self, *, metric: str, mode: str, keep: int) -> None:
        self._metric = metric
        self._mode = mode
        self._keep = keep
        self._kept: list[tuple[float, Path]] = []  # (score, folder), in the order added

    def add(self, path: str | Path, metrics: Mapping[str, Any]) -> None:
        """Records the checkpoint folder `path` and its report; deletes the folders not kept."""
        folder = Path(path)
        (folder / METRICS_FILE).write_text(json.dumps(dict(metrics), default=str))
        self._kept.append((self._score(metrics), folder))
        ranked = sorted(self._kept, key=lambda item: item[0], reverse=True)
        keep = {kept for _, kept in ranked[: self._keep]} | {folder}
        for _, old in self._kept:
            if old not in keep:
                shutil.rmtree(old, ignore_errors=True)
        self._kept = [(score, kept) for score, kept in self._kept if kept in keep]

    def _score(self, metrics: Mapping[str, Any]) -> float:
        """Higher is better."""
        value = metrics.get(self._metric)
        score = float(value) if isinstance(value, (int, float)) else -math.inf
        if math.isnan(score):
            return -math.inf
        return -score if self._mode == "min" else score
