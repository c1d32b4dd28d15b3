#!/usr/bin/env bash
# The one prepared GPU check of the benchmark suite. Run it from the repository root on a machine
# with an NVIDIA GPU and the project installed (torch with CUDA):
#
#     bash benchmarks/gpu_check.sh            # writes benchmarks/results/gpu/
#
# 1. the quickstart with use_gpu=True, one whole GPU per worker (1-worker trials);
# 2. several trials at once on fractional GPUs (0.25 GPU per worker: 4 trials share one GPU),
#    and 2-worker trials on a GPU per worker where the machine has 2 GPUs or more;
# 3. the suite's start-up and report-latency rows with GPU workers (BENCH_GPU=1); with 2 GPUs or
#    more also the 2-worker start-up row and the warm-slot row (16 trials on one slot, GPU
#    memory back to its floor between trials). Over 8 minutes; GPU_CHECK_BENCH=0 leaves it out.
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
# Two workers of one trial need a GPU each (NCCL refuses two ranks on one GPU; the spec
# refuses fractions below 1 for them), so this step needs a machine with 2 GPUs or more.
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    step quickstart_2w_2gpu env GPU_FRACTION=1 GPU_WORKERS=2 GPU_TRIALS=4 \
        "$PYTHON" -m sweeplab.cli sweep benchmarks/gpu_quickstart.py --no-live --storage "$OUT/runs"
else
    echo "quickstart_2w_2gpu skipped: one GPU" | tee -a "$OUT/steps.txt"
fi
# Step 3 takes over 8 minutes (Ray's own pattern, its baseline, is slow): GPU_CHECK_BENCH=0
# leaves it out when the machine's time is short.
if [ "${GPU_CHECK_BENCH:-1}" != 0 ]; then
    gpus=$(nvidia-smi -L | wc -l)
    rows=report_latency,startup_1w
    # A sweep's 2-worker trials (the 2-worker start-up and the warm slot's memory) need a GPU
    # per worker.
    [ "$gpus" -ge 2 ] && rows=$rows,startup_2w,slot_memory
    step bench_rows env BENCH_GPU=1 BENCH_GPUS="$gpus" "$PYTHON" -m benchmarks --quick \
        --only "$rows" --out "$OUT/gpu.json"
fi
exit $status
