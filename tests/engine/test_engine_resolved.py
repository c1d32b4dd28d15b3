"""The resolved settings of a sweep: what sweep.json, the tracker and the trials read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sweeplab import Sweep, grid, uniform
from sweeplab.engine import ResolvedSweep, SweepOptions, apply_options, plan_resources
from sweeplab.engine._sinks import tracker_for


def train_func(config: dict[str, Any]) -> None:
    pass


def resolve(tmp_path: Path, **changes: Any) -> ResolvedSweep:
    fields: dict[str, Any] = {
        "name": "r",
        "train_func": train_func,
        "space": {"x": uniform(0, 1), "k": grid([1, 2])},
        "metric": "loss",
        "mode": "max",
        "searcher": "grid",
        "scheduler": "asha",
        "num_trials": 3,
        "max_iterations": 5,
        "workers_per_trial": 2,
        "cpus_per_worker": 0.5,
        "seed": 4,
        "rank_by": "last",
    }
    options = SweepOptions(
        spec_path=Path("specs/r.py"),
        name="renamed",
        tracking_uri="sqlite:///x.db",
        resume=True,
    )
    sweep = apply_options(Sweep(**{**fields, **changes}), options)
    plan = plan_resources(sweep, [{"CPU": 2.0}])
    return ResolvedSweep.resolve(sweep, options, plan, tmp_path / "renamed" / "run-1")


# The keys and their order are what sweep.json and the parent run's params have always held.
RECORDED = [
    ("searcher", "grid"),
    ("scheduler", "asha"),
    ("metric", "loss"),
    ("mode", "max"),
    ("num_trials", 3),
    ("max_iterations", 5),
    ("workers_per_trial", 2),
    ("use_gpu", False),
    ("cpus_per_worker", 0.5),
    ("placement_strategy", "PACK"),
    ("metrics_from", "rank0"),
    ("rank_by", "last"),
    ("checkpoints_to_keep", 2),
    ("max_failures", 0),
    ("seed", 4),
    ("concurrency", 2),
]


def test_recorded_settings_and_sweep_json(tmp_path: Path) -> None:
    resolved = resolve(tmp_path)
    assert list(resolved.recorded_settings().items()) == RECORDED
    document = resolved.sweep_json()
    assert list(document) == ["name", "spec", "settings", "ray_log", "python"]
    assert document["name"] == "renamed"
    assert document["spec"] == "specs/r.py"
    assert document["ray_log"] == str(tmp_path / "renamed" / "run-1" / "ray.log")
    assert document["python"] == sys.version.split()[0]


def test_options_and_plan_are_applied(tmp_path: Path) -> None:
    resolved = resolve(tmp_path)
    assert resolved.name == "renamed"
    assert resolved.total_trials == 6  # 3 repeats of a 2-point grid
    assert resolved.sweep_dir == tmp_path / "renamed"
    assert resolved.train_storage == str(tmp_path / "renamed" / "run-1" / "train")
    assert (resolved.tracking_uri, resolved.resume) == ("sqlite:///x.db", True)


def test_the_tracker_records_the_resolved_settings(tmp_path: Path) -> None:
    resolved = resolve(tmp_path)
    tracker = tracker_for(resolved)
    assert tracker.sweep_name == "renamed"
    assert tracker.storage_dir == resolved.run_dir
    assert (tracker.rank_by, tracker.scheduler_name, tracker.resume) == ("last", "asha", True)
    assert tracker.spec_path == Path("specs/r.py")
    assert tracker._parent_params() == resolved.recorded_settings()
