#!/bin/bash
# On a device machine with several GPUs, from the repository root: the multi-device GPU tests
# (pytest -m gpu tests/multidevice, one process per GPU over NCCL) and the MLP benchmark under
# torchrun on every GPU. Results go to $OUT (or /tmp/fusescope-multidevice).
#   bash benchmarks/multidevice.sh [TEST_SECONDS] [BENCH_SECONDS] [multidevice_mlp.py options...]
set -u
TESTS=${1:-240}
BENCH=${2:-300}
shift 2 2>/dev/null || shift $#
OUTDIR=${OUT:-/tmp/fusescope-multidevice}
mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} FUSESCOPE_CACHE=/tmp/fusescope-cache
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv 2>&1 | tee "$OUTDIR/gpus.txt"
nvidia-smi topo -m > "$OUTDIR/topology.txt" 2>&1
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
timeout "$TESTS" python -m pytest -m gpu tests/multidevice -q -p no:cacheprovider \
  --junitxml="$OUTDIR/gpu-tests.xml" -o junit_family=xunit1 > "$OUTDIR/gpu-tests.txt" 2>&1
echo "pytest rc=$?" >> "$OUTDIR/gpu-tests.txt"
tail -15 "$OUTDIR/gpu-tests.txt"
timeout "$BENCH" torchrun --nproc-per-node "$GPUS" benchmarks/multidevice_mlp.py --out "$OUTDIR/mlp.json" "$@" \
  > "$OUTDIR/mlp.txt" 2>&1
echo "torchrun rc=$?" >> "$OUTDIR/mlp.txt"
tail -20 "$OUTDIR/mlp.txt"
