"""The quickstart on GPUs, for `benchmarks/gpu_check.sh` (a spec file for `sweeplab sweep`).

    GPU_FRACTION=0.25 GPU_WORKERS=1 GPU_TRIALS=8 sweeplab sweep benchmarks/gpu_quickstart.py

Settings: `GPU_FRACTION` (GPUs per worker, default 1; 0.25 packs 4 workers on a GPU),
`GPU_WORKERS` (workers per trial, default 1), `GPU_TRIALS` (default 4).
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

import quickstart

FRACTION = float(os.environ.get("GPU_FRACTION", "1"))
WORKERS = int(os.environ.get("GPU_WORKERS", "1"))

sweep = quickstart.sweep.replace(
    name=f"gpu_quickstart_{WORKERS}w_{FRACTION:g}gpu".replace(".", "p"),
    use_gpu=True,
    gpus_per_worker=FRACTION,
    workers_per_trial=WORKERS,
    num_trials=int(os.environ.get("GPU_TRIALS", "4")),
)
