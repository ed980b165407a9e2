"""The import contract in pyproject.toml ([tool.importlinter]; docs/architecture.md) holds, and
it is live: an import against the layers breaks it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parent.parent
# lint-imports run from the checkout `cwd` (python -c puts it first on sys.path, so the engine
# analysed is that checkout's, not an installed one).
_LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _LINT], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_engine_keeps_its_layers() -> None:
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_import_against_the_layers_breaks_the_contract(tmp_path: Path) -> None:
    skip = shutil.ignore_patterns("__pycache__")
    for name in ("engine", "fusescope"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "engine" / "ir" / "base.py", "a") as f:
        f.write("\nimport engine.compile  # the IR importing the compile pipeline\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "engine.ir is not allowed to import engine.compile" in r.stdout
