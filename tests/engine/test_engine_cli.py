"""The `sweeplab` command: exit codes, one-line errors, nothing started or written on bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from toy_spec import write_spec

ENV = {**os.environ, "COLUMNS": "120"}


def cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


GOOD = 'name="toy", space={"x": uniform(0, 1)}, metric="loss", mode="min", scheduler="asha"'


def test_preview_prints_the_plan_and_starts_nothing(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, GOOD + ", num_trials=9, max_iterations=9, workers_per_trial=2")
    result = cli("preview", str(spec), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for expected in (
        "search space",
        "uniform [0.0, 1.0]",
        "ASHA",
        "trials reaching it",
        "2 worker(s) x {1 CPU}",
        "concurrency",
    ):
        assert expected in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.py"], "preview wrote files"


@pytest.mark.parametrize(
    "extra", [", workers_per_trial=2, reuse_groups=False", ", workers_per_trial=(1, 2)"]
)
def test_a_group_per_trial_is_previewed(tmp_path: Path, extra: str) -> None:
    spec = write_spec(tmp_path, GOOD + extra)
    result = cli("preview", str(spec), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "trainer groups: group-per-trial: a new trainer group per trial" in result.stdout


BAD_SPECS = [
    ("syntax.py", "def broken(:\n", "syntax.py:1: syntax error"),
    ("nosweep.py", "x = 1\n", "defines no module-level `sweep"),
    ("wrongtype.py", None, "Sweep field `num_trials`"),
    ("pathname.py", None, "Sweep field `name`"),
    ("dotdot.py", None, "Sweep field `name`"),
    ("neverfits.py", None, "can never hold it"),
    ("mo_lengths.py", None, "Sweep field `mode` must be a list of 2 modes"),
    ("mo_unknown.py", None, "Sweep field `constraints[0]` must bound one of the sweep's metrics"),
    ("mo_pbt.py", None, "Sweep field `scheduler` must be one of ['fifo', 'asha'] with several"),
    ("mo_hyperband.py", None, "Sweep field `scheduler` must be one of ['fifo', 'asha'] with"),
    ("mo_badrule.py", None, "Sweep field `constraints[0]` must be '<metric> <op> <number>'"),
    ("mo_pick.py", None, "Sweep field `pick` must end with the metric that picks"),
]
MO = GOOD.replace('metric="loss", mode="min"', 'metric=["loss", "ms"], mode=["min", "min"]')
BAD_SOURCES = {
    "wrongtype.py": GOOD + ', num_trials="many"',
    "pathname.py": GOOD.replace('name="toy"', 'name="../escape"'),
    "dotdot.py": GOOD.replace('name="toy"', 'name="a..b"'),
    "neverfits.py": GOOD + ", workers_per_trial=64",
    "mo_lengths.py": GOOD.replace('metric="loss", mode="min"', 'metric=["loss", "ms"], mode="min"'),
    "mo_unknown.py": MO + ', constraints=["params <= 5"]',
    "mo_pbt.py": MO.replace('"asha"', '"pbt"'),
    "mo_hyperband.py": MO.replace('"asha"', '"hyperband"'),
    "mo_badrule.py": MO + ', constraints=["ms =< 5"]',
    "mo_pick.py": MO + ', pick="ms <= 5"',
}


@pytest.mark.parametrize(("file", "source", "message"), BAD_SPECS)
def test_bad_spec_exits_2_with_one_line(
    tmp_path: Path, file: str, source: str | None, message: str
) -> None:
    if source is None:
        path = write_spec(tmp_path, BAD_SOURCES[file], name=file[:-3])
    else:
        path = tmp_path / file
        path.write_text(source)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = cli("sweep", str(path), "--no-live", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "something was written"


@pytest.mark.parametrize(
    "args",
    [
        ["sweep", "missing.py"],
        ["sweep", "spec.txt"],
        ["preview", "missing.py"],
    ],
)
def test_bad_arguments_exit_2(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "spec.txt").write_text("")
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_num_trials_flag_exits_2(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, GOOD)
    result = cli("sweep", str(spec), "--num-trials", "0", cwd=tmp_path)
    assert result.returncode == 2
    assert "--num-trials" in result.stderr


def test_resume_without_an_interrupted_run_exits_2(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, GOOD)
    result = cli("sweep", str(spec), "--resume", "--no-live", cwd=tmp_path)
    assert result.returncode == 2
    assert "no interrupted sweep" in result.stderr


def test_help_is_fast_and_imports_no_ray(tmp_path: Path) -> None:
    code = (
        "import sys; from sweeplab.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('ray' in sys.modules, 'mlflow' in sys.modules, 'torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert result.stdout.strip().splitlines()[-1] == "False False False"


@pytest.mark.parametrize(
    ("source", "name", "message"),
    [
        (GOOD, "nope", "Sweep field `warm_start`: No sweep named 'nope'"),
        (GOOD, "a/b", "Sweep field `warm_start` must be"),
        (GOOD.replace('"asha"', '"pbt"'), "cold", "grid search and PBT draw their own"),
    ],
)
def test_bad_warm_start_flag_exits_2_with_one_line(
    tmp_path: Path, source: str, name: str, message: str
) -> None:
    spec = write_spec(tmp_path, source)
    result = cli("sweep", str(spec), "--warm-start", name, "--no-live", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.py"], "something was written"


def test_warm_start_plan_is_printed_before_anything_starts(tmp_path: Path) -> None:
    from toy_spec import record_sweep

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cold = [("t0", {"x": 0.9, "y": 1}, [0.5], False), ("t1", {"x": 0.2, "y": 2}, [0.1], False)]
    record_sweep(uri, tmp_path / "cold", "cold", cold)
    # The sweep then fails its resource check: the plan was printed, and nothing ran.
    spec = write_spec(
        tmp_path, GOOD.replace("uniform(0, 1)", "uniform(0, 0.5)") + ", workers_per_trial=64"
    )
    result = cli(
        "sweep", str(spec), "--warm-start", "cold", "--tracking-uri", uri, "--num-trials", "8",
        "--no-live", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2 and "can never hold it" in result.stderr, result.stderr
    assert result.stdout.splitlines() == [
        "warm start: 2 configs from sweep 'cold', ranked by best loss (min), tried first:",
        "  1. rank 1 (trial t1): x=0.2 | y: 2 dropped (not in the space)",
        "  2. rank 2 (trial t0): x=0.5 | x: 0.9 clipped to 0.5 (outside uniform [0.0, 0.5]); "
        "y: 1 dropped (not in the space)",
    ]


# A configured PBT object: it exploits through Tune's controller, which sweeplab does not run.
TUNE_PBT = (
    'name="toy", space={"x": uniform(0, 1)}, metric="loss", mode="min", num_trials=4, '
    "max_iterations=4, scheduler=__import__('ray.tune.schedulers', fromlist=['_'])"
    '.PopulationBasedTraining(perturbation_interval=2, hyperparam_mutations={"x": [0.1, 0.9]})'
)


@pytest.mark.parametrize("command", ["sweep", "preview"])
def test_a_configured_pbt_object_is_refused(tmp_path: Path, command: str) -> None:
    from refused import refused_line

    (tmp_path / "spec").mkdir()
    spec = write_spec(tmp_path / "spec", TUNE_PBT)
    work = tmp_path / "work"
    work.mkdir()
    line = refused_line([command, str(spec), "--no-live"][: 3 if command == "sweep" else 2], work)
    assert "Sweep field `scheduler` must not be a configured scheduler that exploits" in line
    assert "name scheduler='pbt'" in line


def test_a_sweep_run_on_tune_is_not_resumed(tmp_path: Path) -> None:
    """A run folder of an earlier sweeplab, run on Ray Tune's controller: --resume says so."""
    from refused import refused_line

    (tmp_path / "spec").mkdir()
    spec = write_spec(tmp_path / "spec", GOOD)
    work = tmp_path / "work"
    (work / "sweeplab-runs" / "toy" / "run-20260101-000000-000000" / "tune").mkdir(parents=True)
    line = refused_line(["sweep", str(spec), "--no-live", "--resume"], work)
    assert "was run on Ray Tune's controller by an earlier sweeplab" in line
