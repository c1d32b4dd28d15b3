"""The scale-out benchmark's figures from trial spans (benchmarks/scale_out.py)."""

from __future__ import annotations

import pytest

from benchmarks.scale_out import slot_figures


def test_back_to_back_trials_use_every_slot() -> None:
    # 2 slots, 4 trials of 1 s, each next trial starting the moment a slot frees.
    spans = [(0.0, 1.0), (0.0, 1.0), (1.0, 2.0), (1.0, 2.0)]
    figures = slot_figures(spans, slots=2)
    assert figures["utilisation"] == pytest.approx(1.0)
    assert figures["wait_median_s"] == pytest.approx(0.0)
    assert figures["waits"] == 2


def test_a_wait_between_end_and_next_start_is_measured_and_lowers_utilisation() -> None:
    # 1 slot: the second trial starts 0.5 s after the first ended, the third 1.5 s after.
    spans = [(0.0, 1.0), (1.5, 2.5), (4.0, 5.0)]
    figures = slot_figures(spans, slots=1)
    assert figures["utilisation"] == pytest.approx(3.0 / 5.0)
    assert figures["wait_median_s"] == pytest.approx(1.0)
    assert figures["waits"] == 2
    assert figures["wait_p90_s"] >= figures["wait_median_s"]
