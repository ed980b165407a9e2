#!/bin/bash
# On the device machine, from the repository root: the real-size sweep (benchmarks/realworld.py)
# inside one time budget, one process per GPU, each started again with --resume when it dies (a
# CUDA fault ends its process), nvFuser set up from the carried .nvf/ (benchmarks/nvf_env.sh).
# Records, logs and the merged report (realworld.md / .json) go to $OUT (or /tmp/fusescope-realworld).
#   bash benchmarks/realworld.sh [BUDGET_SECONDS] [realworld.py options...]
# --shard I/N is split over the GPUs: on G GPUs, process g takes shard (I-1)*G+g+1 of N*G.
# REALWORLD_GPUS=n uses the first n GPUs only. A case still running at the budget's end is
# killed (20 s of grace) and recorded as a timeout by the next --resume of its shard.
set -u
BUDGET=${1:-540}
shift || true
OUTDIR=${OUT:-/tmp/fusescope-realworld}
mkdir -p "$OUTDIR"
START=$(date +%s)
DEADLINE=$(( START + BUDGET ))
GRACE=20
export PYTHONUNBUFFERED=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
export FUSESCOPE_CACHE=/tmp/fusescope-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 | tee "$OUTDIR/gpu.txt"

SHARD=1/1
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shard) SHARD=$2; shift 2 ;;
    --shard=*) SHARD=${1#--shard=}; shift ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
I=${SHARD%/*}
N=${SHARD#*/}
GPUS=${REALWORLD_GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "$GPUS" -ge 1 ] 2>/dev/null || GPUS=1

source benchmarks/nvf_env.sh

# One GPU's share: started again with --resume until it finishes or the budget is spent.
run_part() {
  local gpu=$1 part=$2 rc=0 attempt left
  local log="$OUTDIR/realworld-shard${part}of$(( N * GPUS )).log"
  for attempt in $(seq 1 30); do
    left=$(( DEADLINE - $(date +%s) ))
    [ "$left" -le 30 ] && break
    CUDA_VISIBLE_DEVICES=$gpu REALWORLD_LAST_RC=$rc timeout -k 10 $(( left + GRACE )) \
      python3 benchmarks/realworld.py --out "$OUTDIR" --deadline $DEADLINE --resume \
      --shard "$part/$(( N * GPUS ))" ${ARGS[@]+"${ARGS[@]}"} >> "$log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] && break
    echo "shard $part/$(( N * GPUS )) exited with $rc (attempt $attempt); going on with --resume" | tee -a "$log"
  done
  # Killed at the time limit with no time left to resume: the case in flight is recorded now.
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    REALWORLD_LAST_RC=$rc python3 benchmarks/realworld.py --out "$OUTDIR" --resume --deadline 0 \
      --shard "$part/$(( N * GPUS ))" ${ARGS[@]+"${ARGS[@]}"} >> "$log" 2>&1
  fi
}

for g in $(seq 0 $(( GPUS - 1 ))); do
  run_part "$g" $(( (I - 1) * GPUS + g + 1 )) &
done
wait
echo "sweep done in $(( $(date +%s) - START )) s"
# The merged report of every shard in $OUTDIR, whatever happened above.
python3 benchmarks/realworld.py --out "$OUTDIR" --report-only "$OUTDIR" ${ARGS[@]+"${ARGS[@]}"} > "$OUTDIR/report.log" 2>&1
head -40 "$OUTDIR/report.log"
exit 0
