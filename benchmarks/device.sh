#!/bin/bash
# On the device machine, from the repository root: set up nvFuser from the carried .nvf/ (see
# shared/peers/README.md; made here by prepare_nvfuser.sh, with symcheck.py copied in), then run
# benchmarks/run.py, starting it again with --resume if a process dies (a peer's crash, a broken
# CUDA context), all inside one time budget. Logs and results go to $OUT (or /tmp/fusescope-bench).
#   bash benchmarks/device.sh [BUDGET_SECONDS] [run.py options...]
set -u
BUDGET=${1:-360}
shift || true
OUTDIR=${OUT:-/tmp/fusescope-bench}
mkdir -p "$OUTDIR"
DEADLINE=$(( $(date +%s) + BUDGET ))
export PYTHONUNBUFFERED=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
export FUSESCOPE_CACHE=/tmp/fusescope-cache TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 | tee "$OUTDIR/gpu.txt"

source benchmarks/nvf_env.sh

for attempt in 1 2 3 4; do
  python3 benchmarks/run.py --out "$OUTDIR" --deadline $DEADLINE --resume "$@" 2>&1 | tee -a "$OUTDIR/run.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && break
  echo "run.py exited with $rc (attempt $attempt); going on with --resume"
  [ $(date +%s) -ge $DEADLINE ] && break
done
# The table last, whatever happened above (from the partial results if run.py never finished).
[ "${rc:-1}" -eq 0 ] || python3 benchmarks/run.py --out "$OUTDIR" --report-only 2>&1 | tee -a "$OUTDIR/run.log"
exit 0
