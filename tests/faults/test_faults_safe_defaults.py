"""Safe defaults, checked without starting Ray: the dashboard binds to loopback, token
authentication is never switched off, `sweeplab status` starts nothing on this machine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from toy_spec_path import write_spec

from sweeplab.cli import main
from sweeplab.engine import SweepOptions, run_sweep
from sweeplab.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]


class _Stop(Exception):
    pass


def test_local_ray_dashboard_binds_to_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    seen: dict[str, Any] = {}

    def fake_init(**kwargs: Any) -> None:
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    spec = write_spec(tmp_path, 'name="safe", space={"x": 0.5}, metric="loss", mode="min"')
    options = SweepOptions(spec_path=spec, storage=tmp_path / "runs", live=False, track=False)
    with pytest.raises(_Stop):
        run_sweep(load_spec(spec), options)
    assert seen["dashboard_host"] == "127.0.0.1"
    # Without --address a sweep starts its own local Ray; it never joins another one by chance.
    assert seen["address"] == "local"
    assert "runtime_env" not in seen  # the settings travel in the environment (prestarted workers)
    assert "_system_config" not in seen


def test_token_auth_is_never_disabled() -> None:
    pattern = re.compile(r"RAY_AUTH_MODE\W{0,6}disabled", re.IGNORECASE)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("sweeplab", "tests", "experiments")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in {".py", ".yaml", ".yml", ".sh", ".toml"}
        and path.is_file()
        and pattern.search(path.read_text(errors="replace"))
    ]
    assert offenders == []


def test_status_without_address_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    def no_ray(**kwargs: Any) -> None:
        raise AssertionError("status without --address must not start Ray")

    monkeypatch.setattr(ray, "init", no_ray)
    monkeypatch.setattr("sweeplab.engine._plan.local_nodes", lambda: [{"CPU": 2.0}])
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "CPU" in out and "2" in out

    fits = write_spec(
        tmp_path,
        'name="fits", space={"x": 0.5}, metric="loss", mode="min", workers_per_trial=1, '
        "num_trials=5",
        name="fits",
    )
    assert main(["status", str(fits)]) == 0
    out = capsys.readouterr().out
    assert "concurrency: 2 trial(s) at once" in out

    never = write_spec(
        tmp_path,
        'name="never", space={"x": 0.5}, metric="loss", mode="min", workers_per_trial=3',
        name="never",
    )
    assert main(["status", str(never)]) == 2
    captured = capsys.readouterr()
    assert "can never hold it" in captured.err
    assert "never.py" in captured.err
