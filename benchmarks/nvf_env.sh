#!/bin/bash
# Sourced (on the device machine, from the repository root): set up nvFuser from the carried
# .nvf/ (see shared/peers/README.md; made here by prepare_nvfuser.sh, with symcheck.py copied
# in) and export the environment that imports it. Logs to $OUTDIR/nvf_setup.log.
OUTDIR=${OUTDIR:-${OUT:-/tmp/fusescope-bench}}
mkdir -p "$OUTDIR"
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
    export PYTHONPATH=${PYTHONPATH:-.}:$NVF FUSESCOPE_NVF_SHIM=$NVF/shim.so
  fi
else
  echo "no .nvf/ carried: nvFuser is skipped"
fi

