"""Ranking by Pareto front, and what a multi-objective sweep writes to MLflow and best_config.json.

The tracker runs against a real SQLite MLflow store, fed trial events directly (no Ray).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sweeplab.keys import (
    CONSTRAINTS_TAG,
    FRONT_ARTIFACT,
    FRONT_INFEASIBLE,
    FRONT_TAG,
    HYPERVOLUME_METRIC,
    OBJECTIVES_TAG,
    RANK_TAG,
    TRIAL_ID_TAG,
)
from sweeplab.pareto import Constraint, Objective, front_numbers, parse_constraint, point_of
from sweeplab.tracking import (
    SweepSummary,
    SweepTracker,
    TrialRecord,
    best_config_document,
    best_trial,
    front_hypervolume,
    load_summary,
    load_sweep,
    pick_trial,
    rank_pareto,
    rank_tune_results,
)

LOSS_LAT = (Objective("loss", "min"), Objective("lat", "min"))
LAT_LE_3 = (parse_constraint("lat <= 3"),)


def _rec(trial_id: str, loss: float | None, lat: float | None = None, **kwargs: Any):
    values = None if loss is None else {"loss": loss, "lat": lat}
    return TrialRecord(trial_id=trial_id, values=values, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("objectives", "constraints", "records", "expected"),
    [
        # front 1 by the first objective, then front 2
        (LOSS_LAT, (), [_rec("d", 3, 3), _rec("c", 5, 1), _rec("b", 2, 2), _rec("a", 1, 5)],
         [("a", 1), ("b", 1), ("c", 1), ("d", 2)]),
        # of two equal first objectives, the better second dominates
        (LOSS_LAT, (), [_rec("b", 1, 2), _rec("a", 1, 1), _rec("c", 2, 0)],
         [("a", 1), ("c", 1), ("b", 2)]),
        # duplicates share a front, in trial id order; the point they dominate is next
        (LOSS_LAT, (), [_rec("y", 1, 1), _rec("x", 1, 1), _rec("z", 2, 2)],
         [("x", 1), ("y", 1), ("z", 2)]),
        # maximised objectives are signed
        ((Objective("loss", "max"), Objective("lat", "min")), (),
         [_rec("a", 1, 1), _rec("b", 2, 1), _rec("c", 3, 2)], [("c", 1), ("b", 1), ("a", 2)]),
        # infeasible after every feasible one (even dominated ones), by how far they break it
        (LOSS_LAT, LAT_LE_3,
         [_rec("a", 0, 9), _rec("b", 0, 4), _rec("c", 5, 3), _rec("d", 9, 3)],
         [("c", 1), ("d", 2), ("b", None), ("a", None)]),
        # no point (missing, NaN, infinite) after infeasible ones, by id; diverged last
        (LOSS_LAT, LAT_LE_3,
         [_rec("e", 1, 1, status="diverged"), _rec("n", None), _rec("m", math.nan, 1),
          _rec("i", 1, math.inf), _rec("f", 2, 2), _rec("x", 1, 4)],
         [("f", 1), ("x", None), ("i", None), ("m", None), ("n", None), ("e", None)]),
        (LOSS_LAT, (), [], []),
    ],
)  # fmt: skip
def test_rank_pareto(
    objectives: tuple[Objective, ...],
    constraints: tuple[Constraint, ...],
    records: list[TrialRecord],
    expected: list[tuple[str, int | None]],
) -> None:
    ranked = rank_pareto(records, objectives, constraints)
    assert [(r.trial_id, r.front) for r in ranked] == expected
    assert [r.rank for r in ranked] == list(range(1, len(expected) + 1))
    feasible = [r for r in ranked if r.has_point and r.violation == 0]
    assert all(r.front is not None for r in feasible)
    # The fronts are those of the feasible points, whatever the order they came in.
    fronts = front_numbers([point_of(r.values or {}, objectives) for r in feasible])
    assert [r.front for r in feasible] == fronts


def test_rank_pareto_sets_the_violation_and_rejects_a_bad_mode() -> None:
    ranked = rank_pareto(
        [_rec("a", 1, 5), _rec("b", None), _rec("c", 1, 2)],
        LOSS_LAT,
        (*LAT_LE_3, parse_constraint("loss >= 2")),
    )
    assert {r.trial_id: r.violation for r in ranked} == {"a": 3.0, "b": math.inf, "c": 1.0}
    with pytest.raises(ValueError, match="`mode`"):
        rank_pareto([], (Objective("loss", "minimum"), Objective("lat", "min")))


FRONT = [_rec("a", 1, 5), _rec("b", 2, 2), _rec("c", 4, 1), _rec("d", 3, 3)]


@pytest.mark.parametrize(
    ("rule", "picked"),
    [
        (None, "a"),  # the first trial of the ranking
        ("lat", "c"),
        ("loss", "a"),
        ("lat <= 2, loss", "b"),
        ("lat <= 2.5, loss >= 2, lat", "c"),
        ("lat < 1, loss", None),  # no front trial passes
        ("loss <= 3, lat", "b"),  # d passes the filter but is not on the front
    ],
)
def test_pick_trial(rule: str | None, picked: str | None) -> None:
    ranked = rank_pareto([_rec(r.trial_id, *(r.values or {}).values()) for r in FRONT], LOSS_LAT)
    chosen = pick_trial(ranked, rule, LOSS_LAT)
    assert (chosen.trial_id if chosen else None) == picked
    summary = SweepSummary(
        trials=ranked, metric="loss", mode="min", rank_by="best", objectives=LOSS_LAT,
        pick_rule=rule,
    )  # fmt: skip
    assert summary.best is summary.picked is chosen


def test_pick_trial_without_a_feasible_front_and_a_bad_rule() -> None:
    ranked = rank_pareto([_rec("a", 1, 9)], LOSS_LAT, LAT_LE_3)
    assert pick_trial(ranked, None, LOSS_LAT) is None
    with pytest.raises(ValueError, match="metric that picks"):
        pick_trial(ranked, "lat <= 2", LOSS_LAT)


def test_front_hypervolume_in_the_objectives_units() -> None:
    objectives = (Objective("acc", "max"), Objective("lat", "min"))
    records = [
        TrialRecord("a", values={"acc": 0.9, "lat": 4.0}),
        TrialRecord("b", values={"acc": 0.8, "lat": 2.0}),
        TrialRecord("c", values={"acc": 0.5, "lat": 5.0}),  # the reference point
        TrialRecord("n"),
    ]
    ranked = rank_pareto(records, objectives)
    volume, reference = front_hypervolume(ranked, objectives)
    assert reference == (0.5, 5.0)
    # a: (0.9 - 0.5) x (5 - 4) = 0.4; b adds (0.8 - 0.5) x (4 - 2) = 0.6
    assert volume == pytest.approx(1.0)
    assert front_hypervolume([TrialRecord("n")], objectives) == (None, None)


def test_best_config_document_of_a_multi_objective_summary() -> None:
    ranked = rank_pareto(
        [_rec("a", 1, 5, config={"x": 1}), _rec("b", 2, 2, config={"x": 2}), _rec("c", 3, 9)],
        LOSS_LAT,
        (parse_constraint("lat <= 8"),),
    )
    summary = SweepSummary(
        trials=ranked, metric="loss", mode="min", rank_by="best", objectives=LOSS_LAT,
        constraints=(parse_constraint("lat <= 8"),), pick_rule="lat <= 3, loss",
    )  # fmt: skip
    doc = best_config_document(summary, "mo")
    assert list(doc) == [
        "sweep", "trial_id", "metric", "mode", "rank_by", "value", "config", "checkpoint",
        "mlflow_run_id", "parent_run_id", "tracking_uri", "trials", "diverged", "objectives",
        "constraints", "pick",
        "hypervolume", "reference_point", "front",
    ]  # fmt: skip
    assert doc["trial_id"] == "b" and doc["value"] == 2 and doc["config"] == {"x": 2}
    assert doc["objectives"] == [{"name": "loss", "mode": "min"}, {"name": "lat", "mode": "min"}]
    assert doc["constraints"] == ["lat <= 8"] and doc["pick"] == "lat <= 3, loss"
    assert [(e["trial_id"], e["rank"], e["values"]) for e in doc["front"]] == [
        ("a", 1, {"loss": 1, "lat": 5}),
        ("b", 2, {"loss": 2, "lat": 2}),
    ]
    # reference: the worst of every trial with a point, infeasible c included
    assert doc["reference_point"] == [3, 9]
    assert doc["hypervolume"] == pytest.approx((3 - 1) * (9 - 5) + (3 - 2) * (5 - 2))
    json.dumps(doc)


# --- the tracker against a real store ---------------------------------------------------------


class _Trial:
    """The attributes of a Tune trial the tracker reads."""

    def __init__(self, trial_id: str, x: float) -> None:
        self.trial_id = trial_id
        self.config = {"x": x}
        self.local_path = self.path = self.error_file = None


# Each trial's reports; its point is its last report holding both objectives.
REPORTS: dict[str, list[dict[str, float]]] = {
    "t_a": [{"loss": 0.9, "lat": 1.0}, {"loss": 0.5, "lat": 2.0}],
    "t_b": [{"loss": 0.3, "lat": 4.0}, {"loss": 0.2}],  # the last report lacks lat
    "t_c": [{"loss": 0.6, "lat": 5.0}],  # dominated by t_a
    "t_d": [{"loss": 0.1, "lat": 9.0}],  # breaks lat <= 6
    "t_e": [{"loss": 0.4}],  # never reported lat: no point
    "t_f": [{"loss": 0.5, "lat": 2.0}],  # t_a's twin: shares its front
}
EXPECTED = [  # trial, rank, front tag, values
    ("t_b", 1, "1", {"loss": 0.3, "lat": 4.0}),
    ("t_a", 2, "1", {"loss": 0.5, "lat": 2.0}),
    ("t_f", 3, "1", {"loss": 0.5, "lat": 2.0}),
    ("t_c", 4, "2", {"loss": 0.6, "lat": 5.0}),
    ("t_d", 5, FRONT_INFEASIBLE, {"loss": 0.1, "lat": 9.0}),
    ("t_e", 6, None, None),
]
CONSTRAINTS = (parse_constraint("lat <= 6"),)


def _tracker(uri: str, storage: Path, pick: str | None = None) -> SweepTracker:
    return SweepTracker(
        tracking_uri=uri, sweep_name="mo", storage_dir=storage, metric="loss", mode="min",
        max_iterations=2, drain_timeout_s=60, objectives=LOSS_LAT, constraints=CONSTRAINTS,
        pick=pick,
    )  # fmt: skip


def _feed(tracker: SweepTracker) -> None:
    tracker.start()
    for n, (trial_id, reports) in enumerate(REPORTS.items()):
        trial = _Trial(trial_id, float(n))
        tracker.trial_started(trial)
        for step, report in enumerate(reports, start=1):
            tracker.trial_reported(trial, {**report, "training_iteration": step})
        tracker.trial_ended(trial)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One SQLite store for the module (creating one takes seconds), and a folder."""
    folder = tmp_path_factory.mktemp("pareto")
    return f"sqlite:///{folder / 'mlflow.db'}", folder


@pytest.fixture(scope="module")
def recorded(store: tuple[str, Path]) -> tuple[SweepTracker, SweepSummary]:
    """The multi-objective sweep of `REPORTS`, recorded with a pick rule."""
    uri, folder = store
    tracker = _tracker(uri, folder / "s", pick="lat <= 3, loss")
    _feed(tracker)
    return tracker, tracker.finish()


def test_a_multi_objective_sweep_in_mlflow(
    store: tuple[str, Path], recorded: tuple[SweepTracker, SweepSummary], tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    uri, folder = store
    tracker, summary = recorded

    assert [(r.trial_id, r.rank, r.values) for r in summary.trials] == [
        (t, rank, values) for t, rank, _, values in EXPECTED
    ]
    assert [r.trial_id for r in summary.front] == ["t_b", "t_a", "t_f"]
    assert summary.picked is not None and summary.picked.trial_id == "t_a"
    # reference: worst loss 0.6 (t_c), worst lat 9 (t_d)
    assert summary.reference_point == (0.6, 9.0)
    expected_volume = (0.6 - 0.3) * (9 - 4) + (0.6 - 0.5) * (4 - 2)
    assert summary.hypervolume == pytest.approx(expected_volume)

    client = MlflowClient(uri)
    parent = client.get_run(tracker.parent_run_id)
    assert json.loads(parent.data.tags[OBJECTIVES_TAG]) == [["loss", "min"], ["lat", "min"]]
    assert json.loads(parent.data.tags[CONSTRAINTS_TAG]) == ["lat <= 6"]
    assert parent.data.metrics[HYPERVOLUME_METRIC] == pytest.approx(expected_volume)
    table = json.loads(Path(client.download_artifacts(parent.info.run_id, FRONT_ARTIFACT,
                                                      str(tmp_path))).read_text())  # fmt: skip
    assert table == [
        {"trial_id": r.trial_id, "run_id": r.run_id, "rank": r.rank, "front": 1,
         "loss": r.values["loss"], "lat": r.values["lat"], "config": r.config}
        for r in summary.front if r.values
    ]  # fmt: skip
    assert parent.data.params["best_trial_id"] == "t_a"
    assert parent.data.metrics["best_loss"] == 0.5

    runs = {
        run.data.tags[TRIAL_ID_TAG]: run
        for run in client.search_runs(
            [parent.info.experiment_id], filter_string="tags.`sweeplab.role` = 'trial'"
        )
    }
    for trial_id, rank, front, values in EXPECTED:
        tags = runs[trial_id].data.tags
        assert tags[RANK_TAG] == f"{rank:02d}"
        assert tags.get(FRONT_TAG) == front
        if values is not None:
            shown = f"loss={values['loss']:.4g} lat={values['lat']:.4g}"
            assert runs[trial_id].info.run_name == f"r0{rank} {trial_id} {shown}"
    assert runs["t_e"].info.run_name == "r06 t_e loss=- lat=-"

    # The front in MLflow is the non-dominated set of the feasible points MLflow holds.
    read = load_summary("mo", tracking_uri=uri)
    points = {
        r.trial_id: point_of(r.values, LOSS_LAT)
        for r in read.trials
        if r.values is not None and all(c.holds(r.values[c.metric]) for c in CONSTRAINTS)
    }
    fronts = dict(zip(points, front_numbers(list(points.values())), strict=True))
    assert {t for t, f in fronts.items() if f == 1} == {r.trial_id for r in read.front}
    for trial_id, _, front, _ in EXPECTED:
        if front not in (None, FRONT_INFEASIBLE):
            assert fronts[trial_id] == int(front)

    # What the reader returns is the sweep's own summary.
    def facts(s: SweepSummary) -> list[tuple]:
        return [(r.trial_id, r.run_id, r.rank, r.front, r.values, r.violation, r.config,
                 r.status) for r in s.trials]  # fmt: skip

    assert facts(read) == facts(summary)
    assert read.objectives == LOSS_LAT and read.constraints == CONSTRAINTS
    assert read.hypervolume == pytest.approx(summary.hypervolume)
    assert read.reference_point == summary.reference_point
    assert read.pick_rule == "lat <= 3, loss" and read.picked is not None
    assert read.picked.trial_id == "t_a"
    data = load_sweep("mo", tracking_uri=uri)
    assert data.objectives == LOSS_LAT and data.summary is not None
    assert facts(data.summary) == facts(summary)

    # best_config.json: the front and the picked trial
    written = json.loads((folder / "s" / "best_config.json").read_text())
    assert written == best_config_document(summary, "mo")
    assert written["trial_id"] == "t_a" and written["value"] == 0.5
    assert [e["trial_id"] for e in written["front"]] == ["t_b", "t_a", "t_f"]
    assert written["pick"] == "lat <= 3, loss"
    assert best_trial("mo", tracking_uri=uri)["front"] == written["front"]


class _Result:
    """The attributes of a ``ray.tune.Result`` that the untracked ranking reads."""

    def __init__(self, path: Path, config: dict, rows: list[dict]) -> None:
        path.mkdir(parents=True)
        (path / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        self.path, self.config, self.error = str(path), config, None
        self.metrics = rows[-1] if rows else {}


def test_untracked_pareto_ranking_matches_the_tracked_one(
    recorded: tuple[SweepTracker, SweepSummary], tmp_path: Path
) -> None:
    _, tracked = recorded
    results = [
        _Result(
            tmp_path / "tune" / trial_id,
            {"x": float(n)},
            [
                {"trial_id": trial_id, "training_iteration": step, **report}
                for step, report in enumerate(reports, start=1)
            ],
        )
        for n, (trial_id, reports) in enumerate(REPORTS.items())
    ]
    untracked = rank_tune_results(
        results, metric="loss", mode="min", max_iterations=2, objectives=LOSS_LAT,
        constraints=CONSTRAINTS,
    )  # fmt: skip
    assert [(r.trial_id, r.rank, r.front, r.values) for r in untracked.trials] == [
        (r.trial_id, r.rank, r.front, r.values) for r in tracked.trials
    ]
    assert untracked.hypervolume == tracked.hypervolume
    assert untracked.picked is not None and untracked.picked.trial_id == "t_b"  # no pick rule
    doc = best_config_document(untracked, "mo")
    assert doc["trial_id"] == "t_b" and [e["trial_id"] for e in doc["front"]] == [
        "t_b", "t_a", "t_f",
    ]  # fmt: skip


def test_a_single_metric_tracker_writes_no_front(store: tuple[str, Path], tmp_path: Path) -> None:
    from mlflow import MlflowClient

    uri, _ = store
    tracker = SweepTracker(
        tracking_uri=uri, sweep_name="one", storage_dir=tmp_path / "s", metric="loss",
        mode="min", drain_timeout_s=60, objectives=(Objective("loss", "min"),),
    )  # fmt: skip
    tracker.start()
    trial = _Trial("t_a", 0.0)
    tracker.trial_started(trial)
    tracker.trial_reported(trial, {"loss": 0.5, "lat": 1.0, "training_iteration": 1})
    tracker.trial_ended(trial)
    summary = tracker.finish()

    assert not summary.multi_objective and summary.trials[0].values is None
    client = MlflowClient(uri)
    parent = client.get_run(tracker.parent_run_id)
    assert OBJECTIVES_TAG not in parent.data.tags and HYPERVOLUME_METRIC not in parent.data.metrics
    assert FRONT_ARTIFACT not in {a.path for a in client.list_artifacts(parent.info.run_id)}
    child = client.get_run(summary.trials[0].run_id or "")
    assert FRONT_TAG not in child.data.tags and child.info.run_name == "r01 t_a loss=0.5"
    assert "front" not in best_config_document(summary, "one")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"objectives": (Objective("lat", "min"), Objective("loss", "min"))}, "first objective"),
        ({"objectives": LOSS_LAT, "pick": "lat <= 3"}, "metric that picks"),
        ({"constraints": CONSTRAINTS}, "several objectives"),
        ({"objectives": (Objective("loss", "min"), Objective("lat", "least"))}, "`mode`"),
    ],
)
def test_tracker_rejects_bad_objectives(tmp_path: Path, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SweepTracker(
            tracking_uri=None, sweep_name="bad", storage_dir=tmp_path, metric="loss",
            mode="min", **kwargs,
        )  # fmt: skip


def test_a_trial_is_ranked_at_its_last_report_holding_every_objective(tmp_path: Path) -> None:
    from sweeplab.tracking._trials import TrialEvents

    events = TrialEvents(
        metric="loss", mode="min", rank_by="best", config_decoder=dict, scheduler_name="asha",
        max_iterations=4, objectives=LOSS_LAT, constraints=LAT_LE_3,
    )  # fmt: skip
    trial = _Trial("t_a", 0.0)
    reports = [{"loss": 0.2, "lat": 1.0}, {"loss": 0.5, "lat": 2.0}, {"loss": 0.1}, {"lat": 9.0}]
    for step, report in enumerate(reports, start=1):
        checkpoint = tmp_path / f"step_{step}"
        checkpoint.mkdir()
        events.on_result(trial, {**report, "training_iteration": step,
                                 "checkpoint_path": str(checkpoint)})  # fmt: skip
    events.on_complete(trial)
    (record,) = events.rank()
    # rank_by="best" does not apply: the point is step 2's, and so is the checkpoint
    assert record.values == {"loss": 0.5, "lat": 2.0} and record.front == 1
    assert record.best_checkpoint == str(tmp_path / "step_2")
    assert record.best_value == 0.1 and record.violation == 0.0
