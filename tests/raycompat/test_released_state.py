"""The parts of `raycompat.ended_trials_released` that need no Ray: what it drops and counts."""

from __future__ import annotations

import pytest

from sweeplab import raycompat
from sweeplab.raycompat._released import _TRIAL_KEYED_CALLBACK_STATE


@pytest.mark.parametrize("name", sorted(_TRIAL_KEYED_CALLBACK_STATE))
def test_the_per_trial_state_of_tunes_callbacks_is_where_it_is_dropped(name: str) -> None:
    # An upgrade of Tune that renames one of these would keep every trial alive again.
    from ray.tune import logger, progress_reporter

    module = progress_reporter if name == "TrialProgressCallback" else logger
    try:
        callback = getattr(module, name)()
    except ImportError:  # TensorboardX is not installed: Tune adds no such callback
        pytest.skip(f"{name} needs a package that is not installed")
    for attribute in _TRIAL_KEYED_CALLBACK_STATE[name]:
        assert isinstance(getattr(callback, attribute, None), dict | set), attribute


def test_new_trials_are_those_after_the_ones_seen() -> None:
    new = raycompat.NewTrials()
    trials = ["a", "b"]
    assert new.since_last(trials) == ["a", "b"]
    trials.append("c")
    assert new.since_last(trials) == ["c"]
    assert new.since_last(trials) == []


def test_released_trials_before_the_new_ones_do_not_hide_them() -> None:
    a, b, c, d = (object() for _ in range(4))
    trials = [a, b, c]
    new = raycompat.NewTrials()
    assert new.since_last(trials) == [a, b, c]
    new.released([a, c])  # told before the controller removes them
    trials[:] = [b]
    trials.append(d)
    assert new.since_last(trials) == [d]


@pytest.mark.parametrize("live", [[], [("live-trial", "live-metadata")]], ids=["alone", "after"])
@pytest.mark.parametrize("chunk", [7, 1 << 16])
def test_released_entries_are_written_as_json_array_elements(
    live: list[tuple[str, str]], chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import json

    monkeypatch.setattr(raycompat.ReleasedTrials, "_CHUNK", chunk)  # chunks that split entries
    released = raycompat.ReleasedTrials()
    entries = [(json.dumps({"id": str(i), "note": "é\n"}), f"metadata {i}") for i in range(50)]
    for i, entry in enumerate(entries):
        released.add(f"/runs/trial_{i}", entry)
    out = io.StringIO()
    out.write("[" + ", ".join(json.dumps(list(entry)) for entry in live))
    released.write_entries(out, after_others=bool(live))
    out.write("]")
    assert json.loads(out.getvalue()) == [list(e) for e in live + entries]
    assert len(released) == 50
    assert [json.loads(line) for line in released.lines()] == [list(e) for e in entries]


def test_no_released_entry_writes_nothing() -> None:
    import io

    out = io.StringIO()
    raycompat.ReleasedTrials().write_entries(out, after_others=True)
    assert out.getvalue() == ""
