"""The scale-out benchmark's figures from trial spans (benchmarks/scale_out.py)."""

from __future__ import annotations

import pytest

from benchmarks.scale_out import slot_figures


def test_back_to_back_trials_use_every_slot() -> None:
    # 2 slots (actors a and b), 4 trials of 1 s, each next trial starting as its actor frees.
    spans = [("a", 0.0, 1.0), ("b", 0.0, 1.0), ("a", 1.0, 2.0), ("b", 1.0, 2.0)]
    figures = slot_figures(spans, slots=2)
    assert figures["utilisation"] == pytest.approx(1.0)
    assert figures["wait_median_s"] == pytest.approx(0.0)
    assert (figures["waits"], figures["actors"]) == (2, 2)


def test_a_wait_is_measured_within_one_actor_and_lowers_utilisation() -> None:
    # 1 slot: the second trial starts 0.5 s after the first ended, the third 1.5 s after.
    spans = [("a", 0.0, 1.0), ("a", 1.5, 2.5), ("a", 4.0, 5.0)]
    figures = slot_figures(spans, slots=1)
    assert figures["utilisation"] == pytest.approx(3.0 / 5.0)
    assert figures["actor_utilisation_median"] == pytest.approx(3.0 / 5.0)
    assert figures["wait_median_s"] == pytest.approx(1.0)
    assert figures["waits"] == 2
    assert figures["wait_p90_s"] >= figures["wait_median_s"]


def test_a_trial_in_a_new_actor_has_no_wait() -> None:
    # The second actor starts late (ramp-up): no wait is counted for it.
    spans = [("a", 0.0, 1.0), ("b", 3.0, 4.0), ("a", 1.0, 2.0)]
    figures = slot_figures(spans, slots=2)
    assert figures["waits"] == 1 and figures["wait_median_s"] == pytest.approx(0.0)
    # Actor b started late, but each actor was busy its whole life.
    assert figures["utilisation"] < 1.0
    assert figures["actor_utilisation_median"] == pytest.approx(1.0)
