#!/usr/bin/env bash
# On the offline GPU machine, from the repository root, with the last folder of
# `python -m benchmarks.gpu_device pack` carried (the others already copied to /tmp/w):
#
#     GPU_CHECK_BENCH=0 bash benchmarks/gpu_device_run.sh .whl/N
#
# Joins split wheels, installs all of them under /tmp/site (the machine's own torch stays),
# runs benchmarks/gpu_check.sh and copies its step logs to $OUT (at most 8 files come back).
set -u
last=${1:?the carried folder, e.g. .whl/3}
mkdir -p /tmp/w && cp "$last"/* /tmp/w/
cd /tmp/w || exit 1
for first in *.part-aa; do
    [ -e "$first" ] || continue
    wheel=${first%.part-aa}
    cat "$wheel".part-* > "$wheel" && rm -f "$wheel".part-*
done
cd - >/dev/null || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site /tmp/w/*.whl > /tmp/install.log 2>&1 \
    || { echo "install failed"; tail -20 /tmp/install.log; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -c "import ray, mlflow, torch, sweeplab; print('ray', ray.__version__, 'torch', torch.__version__, torch.cuda.is_available())" || exit 1
results=/tmp/gpu
OUT=$results PYTHON=python3 timeout "${GPU_LIMIT:-420}" bash benchmarks/gpu_check.sh
echo "gpu_check rc=$?"
for name in steps.txt torch.txt gpu.txt gpu.json; do
    [ -f "$results/$name" ] && cp "$results/$name" "${OUT:-.}/"
done
for log in "$results"/*.log; do
    [ -f "$log" ] && tail -c 200000 "$log" > "${OUT:-.}/$(basename "$log")"
done
