#!/bin/bash
# An A/B of two engines on the same real-world scripts in one device call: the base tree's
# sweep first, then this tree's (benchmarks/realworld.sh each, BUDGET seconds each), then
# benchmarks/realworld_compare.py (new against old: per call, kernel time, nvFuser).
#
#   Here:       bash benchmarks/realworld_ab.sh --prepare REV   # writes .probe/base from git REV
#   On device:  bash benchmarks/realworld_ab.sh BUDGET realworld.py-options...   (carry .probe, .nvf)
#
# The base tree is the engine, benchmarks, scripts and corpus of REV (git archive), with a link
# to the carried .nvf/. Only the comparison and both reports are kept under $OUT (compare.md,
# base.md, new.md): a device call brings back a limited number of files.
set -u
BASE=.probe/base
if [ "${1:-}" = "--prepare" ]; then
  REV=${2:?a git revision}
  rm -rf "$BASE" && mkdir -p "$BASE"
  git archive "$REV" engine benchmarks scripts sample_fusions tests/realworld tests/regressions \
    tests/multidevice/samples.py tests/emulation.py tests/conftest.py tests/rounding.py pyproject.toml \
    | tar -x -C "$BASE"
  rm -rf "$BASE/benchmarks/results"
  ln -s ../../.nvf "$BASE/.nvf"
  echo "base tree of $(git rev-parse --short "$REV") in $BASE ($(du -sh "$BASE" | cut -f1))"
  exit 0
fi
BUDGET=${1:?a budget in seconds for each sweep}
shift
[ -d "$BASE/engine" ] || { echo "no base tree: run 'bash benchmarks/realworld_ab.sh --prepare REV' first"; exit 2; }
R=${OUT:-/tmp/fusescope-ab}
mkdir -p "$R"
(cd "$BASE" && OUT=$R/base PYTHONPATH=. bash benchmarks/realworld.sh "$BUDGET" "$@" > "$R/base.log" 2>&1)
OUT=$R/new PYTHONPATH=. bash benchmarks/realworld.sh "$BUDGET" "$@" > "$R/new.log" 2>&1
python3 benchmarks/realworld_compare.py "$R/new/realworld.json" "$R/base/realworld.json" > "$R/compare.md" 2>&1
cp "$R/new/realworld.md" "$R/new.md" 2>/dev/null
cp "$R/base/realworld.md" "$R/base.md" 2>/dev/null
rm -rf "$R/base" "$R/new"
cat "$R/compare.md"
