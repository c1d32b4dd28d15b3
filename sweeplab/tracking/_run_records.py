"""A recorded sweep's MLflow runs as the records a ranking is made of.

The reader (`load_summary`, `load_sweep`, `ranked_configs`) turns a parent run and its child
runs back into `TrialRecord`s and a `SweepSummary`, from MLflow's own values: the tags the
tracker set when it ranked the trials, the configs, and the metric histories.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sweeplab.keys import (
    CONFIG_TAG,
    CONSTRAINTS_TAG,
    FRONT_TAG,
    OBJECTIVES_TAG,
    RANK_BY_TAG,
    RANK_TAG,
    RESTARTS_TAG,
    STATUS_TAG,
    TRIAL_ID_TAG,
)
from sweeplab.pareto import Constraint, Objective, parse_constraint
from sweeplab.tracking._flatten import unflatten
from sweeplab.tracking._ranking import SweepSummary, TrialRecord, constraint_violation

__all__ = ["summary_of_runs", "sweep_objectives", "trial_config"]


def sweep_objectives(parent: Any) -> tuple[tuple[Objective, ...], tuple[Constraint, ...]]:
    """A sweep's objectives (one: its metric) and constraints, from its parent run."""
    tags, params = parent.data.tags, parent.data.params
    text = tags.get(OBJECTIVES_TAG)
    if not text:
        return (Objective(params.get("metric", ""), params.get("mode", "min")),), ()
    objectives = tuple(Objective(str(n), str(m)) for n, m in json.loads(text))
    constraints = tuple(parse_constraint(c) for c in json.loads(tags.get(CONSTRAINTS_TAG) or "[]"))
    return objectives, constraints


def summary_of_runs(
    parent: Any,
    runs: Sequence[tuple[Any, Mapping[str, Sequence[Any]]]],
    best: Mapping[str, Any],
    uri: str,
) -> SweepSummary:
    """The summary of a sweep from its parent run and each child run with its metric history."""
    objectives, constraints = sweep_objectives(parent)
    metric, mode = objectives[0].name, objectives[0].mode
    several = len(objectives) > 1
    rank_by = parent.data.params.get("rank_by") or parent.data.tags.get(RANK_BY_TAG) or "best"
    checkpoints = {e["trial_id"]: e.get("checkpoint") for e in best.get("front") or ()}
    if best.get("trial_id"):
        checkpoints[best["trial_id"]] = best.get("checkpoint")
    records = []
    for child, history in runs:
        record = _trial_record(child, history, metric, mode, objectives if several else ())
        record.violation = constraint_violation(record.values, constraints)
        record.best_checkpoint = checkpoints.get(record.trial_id)
        records.append(record)
    records.sort(key=lambda r: (r.rank is None, r.rank or 0, r.trial_id))
    return SweepSummary(
        trials=records,
        metric=metric,
        mode=mode,
        rank_by=rank_by,
        parent_run_id=parent.info.run_id,
        tracking_uri=uri,
        objectives=objectives if several else (),
        constraints=constraints,
        pick_rule=best.get("pick") if several else None,
    )


def _trial_record(
    child: Any,
    history: Mapping[str, Sequence[Any]],
    metric: str,
    mode: str,
    objectives: Sequence[Objective],
) -> TrialRecord:
    """One child run as a record: its tags, the metric's curve and the objectives' point."""
    tags = child.data.tags
    curve: dict[int, float] = {}
    for point in history.get(metric, ()):
        curve.setdefault(point.step, point.value)
    finite = {s: v for s, v in curve.items() if math.isfinite(v)}
    best_value = best_iteration = None
    if finite:
        best_value = (min if mode == "min" else max)(finite.values())
        best_iteration = min(s for s, v in finite.items() if v == best_value)
    values = None
    if objectives:
        by_step = [_latest_by_step(history.get(o.name, ())) for o in objectives]
        common = set(by_step[0]).intersection(*by_step[1:])
        if common:
            step = max(common)
            values = {o.name: steps[step] for o, steps in zip(objectives, by_step, strict=True)}
    front = tags.get(FRONT_TAG, "")
    return TrialRecord(
        trial_id=tags.get(TRIAL_ID_TAG, child.info.run_id),
        run_id=child.info.run_id,
        status=tags.get(STATUS_TAG, ""),
        config=trial_config(child),
        best_value=best_value,
        last_value=curve[max(curve)] if curve else None,
        best_iteration=best_iteration,
        iterations=max(curve) if curve else 0,
        restarts=int(tags.get(RESTARTS_TAG, "0") or 0),
        rank=int(tags[RANK_TAG]) if tags.get(RANK_TAG) else None,
        values=values,
        front=int(front) if front.isdigit() else None,
    )


def _latest_by_step(points: Sequence[Any]) -> dict[int, float]:
    """A metric's value at each step; of a step logged twice, the later one."""
    latest: dict[int, tuple[int, float]] = {}
    for point in points:
        if point.step not in latest or point.timestamp >= latest[point.step][0]:
            latest[point.step] = (point.timestamp, point.value)
    return {step: value for step, (_, value) in latest.items()}


def _typed(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def trial_config(run: Any) -> dict[str, Any]:
    text = run.data.tags.get(CONFIG_TAG)
    if text:
        try:
            config = json.loads(text)
        except ValueError:
            config = None
        if isinstance(config, dict):
            return config
    return unflatten({k: _typed(v) for k, v in run.data.params.items()})
