"""The driver's heap trimmer: at most once per period, and only where glibc has malloc_trim."""

from __future__ import annotations

import sys

import pytest

from sweeplab.engine._heap import HeapTrimmer


def test_trims_at_most_once_per_period() -> None:
    now = [100.0]
    trimmer = HeapTrimmer(every_s=10.0, clock=lambda: now[0])
    if not trimmer.available:
        pytest.skip("no glibc malloc_trim here")
    assert not trimmer.maybe_trim()  # the first period has not passed
    now[0] = 110.0
    assert trimmer.maybe_trim()
    now[0] = 115.0
    assert not trimmer.maybe_trim()
    now[0] = 120.5
    assert trimmer.maybe_trim()
    assert trimmer.calls == 2


def test_glibc_linux_has_it_and_elsewhere_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert HeapTrimmer().available == sys.platform.startswith("linux")
    monkeypatch.setattr(sys, "platform", "darwin")
    trimmer = HeapTrimmer(every_s=0.0)
    assert not trimmer.available
    assert not trimmer.maybe_trim() and trimmer.calls == 0
