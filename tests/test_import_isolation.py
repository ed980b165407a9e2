"""The engine never imports the UI stack, and only the adapters import the engine:
fusescope/session.py (loading a fusion), fusescope/compiler.py (compiling it),
fusescope/run_job.py (running it in the worker process), which fusescope/model.py gathers, and
fusescope/md_model.py for multi-device fusions (with the rank worker fusescope/md_rank.py, a
process of its own)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UI_PACKAGES = ("textual", "rich")


def _top_imports(path: Path) -> set[str]:
    """Top-level package names imported anywhere in a file (function bodies included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_import_engine_loads_no_ui_module() -> None:
    # A fresh interpreter, so that modules this test process already holds don't count.
    # Every engine submodule is imported, not just the package, to catch lazy imports too.
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import engine\n"
        "for m in pkgutil.walk_packages(engine.__path__, 'engine.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    loaded = json.loads(r.stdout.strip().splitlines()[-1])
    assert "engine.ir.printer" in loaded  # the walk really imported the engine
    ui = [m for m in loaded if m.split(".")[0] in UI_PACKAGES]
    assert ui == [], f"importing engine pulled in {ui[:5]}"


def test_engine_source_never_imports_ui_packages() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(_top_imports(p) & set(UI_PACKAGES))
        for p in (ROOT / "engine").rglob("*.py")
        if _top_imports(p) & set(UI_PACKAGES)
    }
    assert offenders == {}


def test_only_the_model_imports_the_engine() -> None:
    importers = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "fusescope").rglob("*.py") if "engine" in _top_imports(p)
    )
    assert importers == [
        "fusescope/compiler.py",
        "fusescope/md_model.py",
        "fusescope/md_rank.py",
        "fusescope/run_job.py",
        "fusescope/session.py",
    ]
