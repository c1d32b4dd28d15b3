#!/usr/bin/env bash
# The one prepared GPU check of the benchmark suite. Run it from the repository root on a machine
# with an NVIDIA GPU and the project installed (torch with CUDA):
#
#     bash benchmarks/gpu_check.sh            # writes benchmarks/results/gpu/
#
# 1. the quickstart with use_gpu=True, one whole GPU per worker (1-worker trials);
# 2. several trials at once on fractional GPUs (0.25 GPU per worker: 4 trials share one GPU);
# 3. the suite's start-up and report-latency rows with GPU workers (BENCH_GPU=1), and the
#    warm-slot row: 16 trials on one slot, GPU memory back to its floor between trials.
# Each step's output goes to its own log; the table of step 3 goes to gpu.json.
set -uo pipefail
PYTHON=${PYTHON:-python}
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT"
export QUICKSTART_EPOCHS=${QUICKSTART_EPOCHS:-4}
status=0

"$PYTHON" -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.cuda.is_available()); sys.exit(0 if torch.cuda.is_available() else 1)" \
    | tee "$OUT/torch.txt" || { echo "no CUDA in this torch: stopping"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"

step() {  # step NAME COMMAND...: runs it, times it, keeps its log and exit code
    local name=$1; shift
    local begin=$SECONDS
    echo "== $name: $*"
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc wall=$((SECONDS - begin))s" | tee -a "$OUT/steps.txt"
    tail -n 25 "$OUT/$name.log"
    [ "$rc" -eq 0 ] || status=1
}

step quickstart_1gpu env GPU_FRACTION=1 GPU_WORKERS=1 GPU_TRIALS=4 \
    "$PYTHON" -m sweeplab.cli sweep benchmarks/gpu_quickstart.py --no-live --storage "$OUT/runs"
step quickstart_quarter_gpu env GPU_FRACTION=0.25 GPU_WORKERS=1 GPU_TRIALS=8 \
    "$PYTHON" -m sweeplab.cli sweep benchmarks/gpu_quickstart.py --no-live --storage "$OUT/runs"
step quickstart_2w_half_gpu env GPU_FRACTION=0.5 GPU_WORKERS=2 GPU_TRIALS=4 \
    "$PYTHON" -m sweeplab.cli sweep benchmarks/gpu_quickstart.py --no-live --storage "$OUT/runs"
# Step 3 takes over 8 minutes (Ray's own pattern, its baseline, is slow): GPU_CHECK_BENCH=0
# leaves it out when the machine's time is short.
if [ "${GPU_CHECK_BENCH:-1}" != 0 ]; then
    step bench_rows env BENCH_GPU=1 "$PYTHON" -m benchmarks --quick \
        --only report_latency,startup_1w,startup_2w,slot_memory --out "$OUT/gpu.json"
fi
exit $status
