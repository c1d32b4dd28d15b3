"""CLI habits: `preview` takes the flags that change the plan, piped output never wraps, and the
commands a person pipes print JSON."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_store import store_uri
from toy_spec import record_sweep, write_spec

from sweeplab.cli import main

GOOD = 'name="toy", space={"x": uniform(0, 1)}, metric="loss", mode="min", scheduler="asha"'
ASHA = GOOD + ", num_trials=9, max_iterations=9"
# A pipe: no COLUMNS to fall back on, as in a CI log or `| tee`.
PIPE_ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", *args],
        cwd=cwd,
        env=PIPE_ENV if env is None else env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def here(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cwd: Path, *args: str
) -> tuple[int, str, str]:
    """The same command through the CLI's `main` in this process (no second interpreter): its
    exit code, stdout and stderr. The output is captured, so not a terminal, as in a pipe."""
    for name in ("COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exit_:  # argparse's own errors exit, as the process would
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _rungs(out: str) -> list[tuple[int, int, int]]:
    """The rung table's rows: (bracket, iteration, trials reaching it)."""
    return [
        (int(m[1]), int(m[2]), int(m[3]))
        for m in re.finditer(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s*$", out, re.MULTILINE)
    ]


def test_preview_with_num_trials_shows_the_plan_sweep_would_run(tmp_path: Path) -> None:
    from sweeplab.engine import trial_plan
    from sweeplab.spec import load_spec

    spec = write_spec(tmp_path, ASHA)
    default = cli("preview", str(spec), cwd=tmp_path)
    result = cli("preview", str(spec), "--num-trials", "60", "--name", "wide", cwd=tmp_path)
    assert default.returncode == 0 and result.returncode == 0, result.stderr
    assert "trial plan: 9 trials" in default.stdout
    assert "trial plan: 60 trials" in result.stdout
    assert result.stdout.startswith(f"sweep wide  ({spec})")
    expected, budget, _ = trial_plan(load_spec(spec).replace(num_trials=60))
    assert _rungs(result.stdout) == [(r.bracket, r.iteration, r.trials) for r in expected]
    assert _rungs(result.stdout)[0][2] == 60
    assert f"budget: at most {budget} iterations in all (without early stopping: 540)" in (
        result.stdout
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.py"], "preview wrote files"


def test_preview_and_sweep_share_every_flag_that_changes_the_plan() -> None:
    from sweeplab.cli._parser import build_parser

    def options(command: str) -> set[str]:
        sub = next(a for a in build_parser()._actions if a.dest == "command")
        parser = sub.choices[command]  # type: ignore[attr-defined]
        return {s for a in parser._actions for s in a.option_strings}

    # where and how, not what, it runs
    run_only = {
        "--storage",
        "--resume",
        "--no-live",
        "--stall-timeout",
        "--fail-on-stall",
    }
    assert options("sweep") - run_only <= options("preview")
    assert {"--num-trials", "--address", "--name", "--warm-start", "--pick"} <= options("preview")


def test_preview_with_an_address_plans_for_the_cluster_without_joining_it(
    tmp_path: Path,
) -> None:
    # 64 workers never fit this machine, so a local plan refuses; the cluster may hold them.
    spec = write_spec(tmp_path, ASHA + ", workers_per_trial=64")
    local = cli("preview", str(spec), cwd=tmp_path)
    assert local.returncode == 2 and "can never hold it" in local.stderr
    # Nothing listens on port 1: preview would fail if it tried to connect.
    result = cli("preview", str(spec), "--address", "127.0.0.1:1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "one trial: 64 worker(s) x {1 CPU}" in out
    assert (
        "concurrency: at most 9 trial(s) at once, as many as the Ray cluster at 127.0.0.1:1 "
        "holds: the sweep reads its resources when it starts"
    ) in out
    assert f"sweeplab status {spec} --address 127.0.0.1:1" in out
    assert "on this machine" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.py"], "preview wrote files"


def test_preview_shows_the_warm_start_sweep_would_try_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cold = [("t0", {"x": 0.9}, [0.5], False), ("t1", {"x": 0.2}, [0.1], False)]
    record_sweep(uri, tmp_path / "cold", "cold", cold)
    before = sorted(p.name for p in tmp_path.iterdir())
    spec = write_spec(tmp_path, ASHA.replace("uniform(0, 1)", "uniform(0, 0.5)"))
    code, out, err = here(
        capsys, monkeypatch, tmp_path, "preview", str(spec), "--warm-start", "cold",
        "--tracking-uri", uri,
    )  # fmt: skip
    assert code == 0, err
    assert (
        "warm start: 2 configs from sweep 'cold', ranked by best loss (min), tried first:\n"
        "  1. rank 1 (trial t1): x=0.2 | as recorded\n"
        "  2. rank 2 (trial t0): x=0.5 | x: 0.9 clipped to 0.5 (outside uniform [0.0, 0.5])\n"
    ) in out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "toy.py"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--warm-start", "nope"], "Sweep field `warm_start`: No sweep named 'nope'"),
        (["--pick", "ms <= 5"], "--pick: Sweep field `pick`"),
        (["--num-trials", "0"], "--num-trials: must be an integer >= 1"),
    ],
)
def test_preview_refuses_a_bad_flag_as_sweep_does(
    tmp_path: Path,
    flags: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = write_spec(tmp_path, ASHA)
    uri = f"sqlite:///{tmp_path / 'none.db'}"
    for command in ("preview", "sweep"):
        code, _, err = here(capsys, monkeypatch, tmp_path, command, str(spec), *flags,
                            "--tracking-uri", uri)  # fmt: skip
        assert code == 2, err
        assert message in err.strip().splitlines()[-1], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.py"], "something was written"


def _deep_folder(tmp_path: Path) -> Path:
    folder = tmp_path.joinpath(*[f"a-rather-long-folder-name-{i:02d}" for i in range(8)])
    folder.mkdir(parents=True)
    return folder


def test_piped_output_keeps_long_paths_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _deep_folder(tmp_path)
    spec = write_spec(folder, ASHA)
    assert len(str(spec)) > 250
    result = cli("preview", str(spec), cwd=tmp_path)  # a real pipe, in its own interpreter
    assert result.returncode == 0, result.stderr
    assert f"sweep toy  ({spec})" in result.stdout.splitlines()

    # `best`: a long path inside the best config, printed as JSON (captured: not a terminal).
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    data = str(folder / "data" / "train-shards-0000-of-1024.parquet")
    record_sweep(uri, folder / "storage", "cold", [("t0", {"x": 0.2, "data": data}, [0.1], False)])
    code, out, err = here(capsys, monkeypatch, tmp_path, "best", "cold", "--tracking-uri", uri)
    assert code == 0, err
    assert f'  "data": "{data}"' in [line.rstrip(",") for line in out.splitlines()]


def test_a_terminal_keeps_its_width(tmp_path: Path) -> None:
    spec = write_spec(_deep_folder(tmp_path), ASHA)
    controller, terminal = pty.openpty()
    env = {**PIPE_ENV, "COLUMNS": "60", "LINES": "40", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "sweeplab.cli", "preview", str(spec)],
        cwd=tmp_path,
        env=env,
        stdout=terminal,
        stderr=subprocess.PIPE,
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert process.wait(timeout=120) == 0, process.stderr.read() if process.stderr else ""
    os.close(controller)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode())
    lines = text.replace("\r", "").splitlines()
    assert lines and max(len(line) for line in lines) <= 60
    assert not any(str(spec) in line for line in lines)


def test_ls_and_best_json_parse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = store_uri(tmp_path)  # `ls` of a store that does not exist is exit 2, not []
    code, out, err = here(capsys, monkeypatch, tmp_path, "ls", "--json", "--tracking-uri", uri)
    assert code == 0, err
    assert json.loads(out) == []
    record_sweep(uri, tmp_path / "a", "first", [("t0", {"x": 0.5}, [0.4, 0.3], False)])
    record_sweep(
        uri,
        tmp_path / "b",
        "second",
        [("t0", {"x": 0.1}, [0.2], False), ("t1", {"x": 0.9}, [], True)],
    )
    code, out, err = here(capsys, monkeypatch, tmp_path, "ls", "--json", "--tracking-uri", uri)
    assert code == 0, err
    rows = json.loads(out)
    assert [row["sweep"] for row in rows] == ["second", "first"]  # newest first
    first = rows[1]
    assert first["trials"] == 1 and first["metric"] == "loss"
    assert first["best_metric"] == pytest.approx(0.3)
    assert first["status"] == "FINISHED"
    assert first["started"].endswith("+00:00")
    assert rows[0]["trials"] == 2 and rows[0]["best_metric"] == pytest.approx(0.2)
    assert set(first) == {
        "sweep",
        "status",
        "trials",
        "best_metric",
        "metric",
        "started",
        "parent_run_id",
    }
    code, out, err = here(
        capsys, monkeypatch, tmp_path, "best", "first", "--json", "--tracking-uri", uri
    )
    assert code == 0, err
    best = json.loads(out)
    assert best["trial_id"] == "t0" and best["config"] == {"x": 0.5}
    assert best["parent_run_id"] == first["parent_run_id"]


def test_status_json_parses_and_starts_nothing(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, ASHA + ", workers_per_trial=1")
    result = cli("status", str(spec), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["address"] is None
    (node,) = status["nodes"]
    assert node["node_id"] == "(local)" and node["total"]["CPU"] >= 1 and node["free"] is None
    assert status["sweep"]["name"] == "toy" and status["sweep"]["workers"] == 1
    assert status["sweep"]["total_trials"] == 9
    assert 1 <= status["sweep"]["concurrency"] <= 9
    never = write_spec(tmp_path, ASHA + ", workers_per_trial=64", name="big")
    refused = cli("status", str(never), "--json", cwd=tmp_path)
    assert refused.returncode == 2 and "can never hold it" in refused.stderr
    assert refused.stdout == ""
