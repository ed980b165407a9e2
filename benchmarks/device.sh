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

NVF=/tmp/nvf
if [ -f .nvf/nvfuser_torch210_nonvrtc.tar.xz ]; then
  (
    set -e
    mkdir -p $NVF && tar -xJf .nvf/nvfuser_torch210_nonvrtc.tar.xz -C $NVF
    SITE=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
    ln -sf "$SITE/nvidia/cu13/lib/libnvrtc.so.13" $NVF/nvfuser_cu130_torch210.libs/libnvrtc-a49e67e8.so.13.0.88
    echo "$SITE/torch/lib:$SITE/nvidia/cu13/lib:$NVF/nvfuser_cu130_torch210.libs:$NVF/nvfuser_common/lib" > $NVF/ldpath
    LD_LIBRARY_PATH=$(cat $NVF/ldpath) python3 .nvf/symcheck.py .nvf/syms/torch210_external.txt $NVF/shim.c
    gcc -shared -fPIC -o $NVF/shim.so $NVF/shim.c
  ) > "$OUTDIR/nvf_setup.log" 2>&1 && echo "nvFuser set up in $NVF" || { echo "nvFuser setup failed:"; tail -5 "$OUTDIR/nvf_setup.log"; }
  if [ -f $NVF/shim.so ]; then
    export LD_LIBRARY_PATH=$(cat $NVF/ldpath)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PYTHONPATH=$PYTHONPATH:$NVF FUSESCOPE_NVF_SHIM=$NVF/shim.so
  fi
else
  echo "no .nvf/ carried: nvFuser is skipped"
fi

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
