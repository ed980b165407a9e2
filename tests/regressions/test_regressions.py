"""Fusions the fuzzer (tests/fuzz) found failing, kept as fusion files: each must now compile,
emulate and match the reference (run in a child process, so a native crash names its file).
A file whose schedule is invalid says so on a line `# expect refused: TEXT`: the engine must
then refuse it with an error containing TEXT (at compile time, or an `fd.sched` call of the file
that the loader reports)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.emulation import needs_gxx

HERE = Path(__file__).parent
CASES = sorted((HERE / "fusions").glob("*.py"))
CHECK = """
import sys
from engine import load_fusion
from tests.fuzz.harness import REFUSALS, run_compiled
for path in sys.argv[1:]:
    try:
        fd = load_fusion(path)
        o = run_compiled(fd, fd.example_inputs(seed=0))
        print(path, o.kind, o.category, o.detail.replace(chr(10), ' / ')[:2000], flush=True)
    except Exception as e:
        # A refused fd.sched call reaches us as the loader's FusionFileError.
        kind = "refused" if isinstance(e.__cause__, REFUSALS) else "error"
        print(path, kind, type(e).__name__, str(e).replace(chr(10), ' / ')[:2000], flush=True)
"""


def test_there_are_regression_cases() -> None:
    assert CASES, f"no fusion files in {HERE / 'fusions'}"


@pytest.fixture(scope="module")
def outcomes() -> dict[str, str]:
    """Every case run once, in one child process (one engine import for all)."""
    repo = HERE.parents[1]
    p = subprocess.run([sys.executable, "-c", CHECK, *map(str, CASES)], cwd=repo, capture_output=True,
                       text=True, timeout=900)
    done = {}
    for line in p.stdout.splitlines():
        path, _, rest = line.partition(" ")
        done[path] = rest
    for c in CASES:
        if str(c) not in done:
            done[str(c)] = f"the child process died (exit {p.returncode}) on or before this case:\n{p.stderr[-3000:]}"
            break
    return done


@needs_gxx
@pytest.mark.parametrize("path", CASES, ids=[c.stem for c in CASES])
def test_regression_case_matches_reference(path: Path, outcomes: dict[str, str]) -> None:
    got = outcomes.get(str(path), "not run: an earlier case killed the child process")
    expect = [line.split(":", 1)[1].strip() for line in path.read_text().splitlines()
              if line.startswith("# expect refused:")]
    if expect:
        assert got.startswith("refused") and expect[0] in got, f"{path.name}: {got}"
    else:
        assert got.startswith("pass"), f"{path.name}: {got}"
