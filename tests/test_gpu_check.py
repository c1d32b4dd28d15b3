"""The prepared GPU check: its script parses, and its spec is refused cleanly without a GPU."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sweeplab.cli import main
from sweeplab.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_script_parses() -> None:
    subprocess.run(["bash", "-n", str(ROOT / "benchmarks/gpu_check.sh")], check=True)


@pytest.mark.parametrize(("fraction", "workers"), [("1", "1"), ("0.25", "1"), ("1", "2")])
def test_gpu_spec_fields(monkeypatch: pytest.MonkeyPatch, fraction: str, workers: str) -> None:
    monkeypatch.setenv("GPU_FRACTION", fraction)
    monkeypatch.setenv("GPU_WORKERS", workers)
    sweep = load_spec(ROOT / "benchmarks/gpu_quickstart.py")
    assert sweep.use_gpu
    assert sweep.worker_resources == {"CPU": 1.0, "GPU": float(fraction)}
    assert sweep.workers_per_trial == int(workers)


def test_two_workers_on_a_fraction_of_a_gpu_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from sweeplab.errors import SpecError

    monkeypatch.setenv("GPU_FRACTION", "0.5")
    monkeypatch.setenv("GPU_WORKERS", "2")
    with pytest.raises(SpecError, match=r"`gpus_per_worker` must be >= 1 when a trial has several"):
        load_spec(ROOT / "benchmarks/gpu_quickstart.py")


def test_gpu_spec_refused_on_a_machine_without_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the spec fits")
    assert main(["preview", str(ROOT / "benchmarks/gpu_quickstart.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "1 GPU" in err[0] and "can never hold it" in err[0]
