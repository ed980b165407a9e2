"""Robustness sweep of the fusescope TUI over every fusion file of the repository.

Each file is opened through the `o` key flow (the open screen, its path typed in, enter) in a
headless FusescopeApp driven by Textual's Pilot; then every view is visited: i (Fusion IR, the
listing cursor moved), the tensor tree's cursor moved a few steps, s (Schedule), g (Segments, a
segment step), u (CUDA: source, kernel IR, stages, runtime headers), h (Host IR), t (Options),
x (Run, and a run on the emulate back end for every --emulate'th file), and finally u again, so that the next file opens while a compiled tab shows (its views must follow).

By default one app opens every file in turn, as a user would: besides crashes this finds views
showing stale content from the previous fusion (checked after each file). An app that crashes is
replaced by a fresh one for the next file. --fresh starts one app per file instead.

Recorded per file: exceptions (Textual exits the app on an unhandled widget or worker exception:
app._exception / return code), error and warning notifications, notifications that leak a
Python traceback or run very long, stale views, and the time taken (over --slow is a problem:
views that keep answering each other never settle). Files the engine
refuses (tests/realworld/test_realworld.py REFUSED / COMPILE_REFUSED, regressions with a
`# expect refused:` line) must show an error notification and leave the app running.

Usage (from the repository root):
    python scripts/tui_sweep.py                      # every file; every 3rd emulated (~15 min)
    python scripts/tui_sweep.py --emulate 1          # every file emulated (slower)
    python scripts/tui_sweep.py --no-run -k rope     # files whose name contains "rope", no runs
    python scripts/tui_sweep.py --fresh FILE...      # given files, one app each
Exit status: 0 when no file had a problem, 1 otherwise. --json PATH writes the records.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GLOBS = ("tests/realworld/scripts/*.py", "tests/regressions/fusions/*.py", "sample_fusions/*.py")
SIZE = (140, 40)


@dataclass
class Record:
    path: str
    expect: str = "works"  # works | load-refused | compile-refused
    views: list[str] = field(default_factory=list)
    ran: str = ""  # the emulate run's status, "" when not run
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # error notifications (title: message)
    warnings: list[str] = field(default_factory=list)


def sweep_files(patterns: list[str]) -> list[Path]:
    files: list[Path] = []
    for g in GLOBS:
        files += sorted(p for p in ROOT.glob(g) if not p.name.startswith("_"))
    if patterns:
        files = [p for p in files if any(k in str(p) for k in patterns)]
    return files


def expectations() -> dict[str, str]:
    """Path -> load-refused / compile-refused, from the test modules that pin the refusals."""
    out: dict[str, str] = {}
    tree = ast.parse((ROOT / "tests/realworld/test_realworld.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("REFUSED", "COMPILE_REFUSED") and isinstance(node.value, ast.Dict):
                for k in node.value.keys:
                    if isinstance(k, ast.Constant):
                        kind = "load-refused" if name == "REFUSED" else "compile-refused"
                        out[str(ROOT / "tests/realworld/scripts" / f"{k.value}.py")] = kind
    for p in ROOT.glob("tests/regressions/fusions/*.py"):
        if any(line.startswith("# expect refused:") for line in p.read_text().splitlines()):
            # A refused fd.sched call is a load error; a refused schedule a compile error.
            out[str(p)] = "refused"
    return out


def leaks(message: str) -> str | None:
    """Why a notification's text is not a one-line message, or None."""
    if "Traceback" in message or 'File "' in message:
        return "leaks a Python traceback"
    if len(message) > 600:
        return f"is {len(message)} characters long"
    return None


class Sweep:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.expect = expectations()
        self.app = None  # the app in use (chain mode)
        self.pilot = None
        self._ctx = None
        self.notes: list[tuple[str, str, str]] = []  # (severity, title, message) since the last take
        self.runs = 0

    # ---- the app ----------------------------------------------------------------------
    async def start(self) -> None:
        from fusescope.app import FusescopeApp

        self.app = FusescopeApp(None)
        original = self.app.notify

        def notify(message: str, *, title: str = "", severity: str = "information", **kw: object) -> None:
            self.notes.append((severity, title, str(message)))
            original(message, title=title, severity=severity, **kw)  # type: ignore[arg-type]

        self.app.notify = notify  # type: ignore[method-assign]
        self._ctx = self.app.run_test(size=SIZE)
        self.pilot = await self._ctx.__aenter__()

    async def stop(self) -> str | None:
        """Shut the app down; the traceback of the exception that ended it, if one did."""
        ctx, self._ctx, self.app = self._ctx, None, None
        if ctx is None:
            return None
        try:
            await ctx.__aexit__(None, None, None)
        except Exception as e:
            return "".join(traceback.format_exception(e)).rstrip()
        return None

    def alive(self) -> bool:
        app = self.app
        return app is not None and app._exception is None and app.return_code is None and app.is_running

    async def settle(self) -> None:
        assert self.app is not None and self.pilot is not None
        await self.app.workers.wait_for_complete()
        await self.pilot.pause()
        await self.app.workers.wait_for_complete()  # a message handled in the pause may start one
        await self.pilot.pause()

    async def press(self, *keys: str) -> None:
        assert self.pilot is not None
        await self.pilot.press(*keys)
        await self.pilot.pause()

    # ---- one file ---------------------------------------------------------------------
    async def visit(self, path: Path, emulate: bool, headers: bool) -> Record:
        from textual.widgets import Input, TabbedContent

        from fusescope.screens.open_file_screen import OpenFileScreen

        rec = Record(str(path.relative_to(ROOT)), self.expect.get(str(path), "works"))
        start = time.perf_counter()
        if self.app is None or self.args.fresh:
            if self.app is not None:
                await self._finish(rec)
            await self.start()
        self.notes.clear()
        app, before = self.app, self.app.session
        assert app is not None
        try:
            # o: the open screen, the path, enter.
            await self.press("o")
            if not isinstance(app.screen, OpenFileScreen):
                rec.problems.append("o did not open the file screen")
            else:
                app.screen.query_one(Input).value = str(path)
                await self.press("enter")
            await self.settle()
            loaded = app.session is not None and app.session is not before and app.session.path == path
            if rec.expect == "load-refused" or (rec.expect == "refused" and not loaded):
                rec.expect = "load-refused"
                if loaded:
                    rec.problems.append("expected the loader to refuse it; it loaded")
                if not any(s == "error" for s, _, _ in self.notes):
                    rec.problems.append("refused file: no error notification")
            elif not loaded:
                rec.problems.append("did not load: " + "; ".join(m for s, _, m in self.notes if s == "error"))
            steps: list[tuple[str, tuple[str, ...]]] = [
                ("i", ("i", "down", "down", "down")),
                ("tree", ()),
                ("s", ("s", "down")),
                ("g", ("g", "down", "up")),
                ("u", ("u", "v", "v") + (("a", "a") if headers else ())),
                ("h", ("h",)),
                ("t", ("t",)),
                ("x", ("x",)),
            ]
            for view, keys in steps:
                if not self.alive():
                    break
                if view == "tree":
                    tree = app.query_one("#tensors")
                    tree.focus()
                    await self.press("down", "down", "down", "down", "up")
                    rec.views.append("tree")
                    continue
                await self.press(*keys)
                await self.settle()
                rec.views.append(view)
            if self.alive() and loaded:
                if rec.expect == "refused":
                    result = app.query_one("#segments").result
                    rec.expect = "compile-refused"
                    if result is None or not result.error:
                        rec.problems.append("expected a refusal at compile time; it compiled")
                if rec.expect == "compile-refused" and not any(t == "Compilation failed" for _, t, _ in self.notes):
                    rec.problems.append("refused compile: no 'Compilation failed' notification")
            if self.alive() and loaded and emulate and app.query_one(TabbedContent).active == "tab-run":
                await self.press("e")
                await self.settle()
                run = app.query_one("#run").result
                rec.ran = run.status if run is not None else "no result"
                self.runs += 1
                if rec.expect == "works" and rec.ran != "ok":
                    rec.problems.append(f"emulate run: {rec.ran}: {run.message if run else ''}"[:400])
            if self.alive():
                await self.press("u")  # the next file opens on a compiled tab
                await self.settle()
            if self.alive() and loaded:
                rec.problems += self.stale(app)
        except Exception as e:  # pilot raising because the app died, or a bug of ours
            if self.alive():
                rec.problems.append("sweep error: " + "".join(traceback.format_exception_only(e)).strip())
        if not self.alive():
            tb = await self.stop()
            rec.problems.append("APP EXITED" + (f":\n{tb}" if tb else f" (return code {None})"))
        elif self.args.fresh:
            await self._finish(rec)
        for severity, title, message in self.notes:
            text = f"{title}: {message}" if title else message
            why = leaks(message)
            if why:
                rec.problems.append(f"notification {why}: {text[:300]}")
            if severity == "error":
                rec.errors.append(text)
                if rec.expect == "works":
                    rec.problems.append(f"error notification: {text[:300]}")
            elif severity == "warning":
                rec.warnings.append(text)
        rec.seconds = time.perf_counter() - start
        if rec.seconds > self.args.slow:  # how a livelock of the views shows (they never settle)
            rec.problems.append(f"slow: {rec.seconds:.0f} s (over --slow {self.args.slow:.0f} s)")
        return rec

    async def _finish(self, rec: Record) -> None:
        tb = await self.stop()
        if tb:
            rec.problems.append(f"exception at shutdown:\n{tb}")

    @staticmethod
    def stale(app: object) -> list[str]:
        """Views showing something other than the current session's content."""
        from fusescope.app import FusescopeApp

        assert isinstance(app, FusescopeApp) and app.session is not None
        s, out = app.session, []
        current = s.compiled(app.options)
        for wid in ("#schedule", "#segments", "#cuda", "#host-ir"):
            view = app.query_one(wid)
            if view.result is not None and view.result is not current:
                out.append(f"stale {wid}: shows a compilation of another session or options")
            if view.loading:
                out.append(f"{wid} still loading after the workers finished")
        if app.query_one("#listing").text != s.listing:
            out.append("stale #listing")
        t = app.query_one("#transforms").tensor
        if t is not None and t not in s.tensors:
            out.append(f"stale #transforms: tensor {t} is not in this fusion")
        run = app.query_one("#run").result
        if run is not None and run not in s.runs:
            out.append("stale #run: a run of another session")
        if app.query_one("#tensors").root.label.plain != s.title:
            out.append("stale #tensors")
        return out


async def main_async(args: argparse.Namespace) -> list[Record]:
    files = [Path(f).resolve() for f in args.files] if args.files else sweep_files(args.k)
    sweep = Sweep(args)
    records = []
    try:
        for k, path in enumerate(files):
            emulate = not args.no_run and k % args.emulate == 0
            rec = await sweep.visit(path, emulate, headers=k % args.headers == 0)
            records.append(rec)
            flag = "PROBLEM" if rec.problems else "ok"
            print(f"[{k + 1}/{len(files)}] {flag:7} {rec.seconds:6.1f}s {rec.path}", flush=True)
            for p in rec.problems:
                print("        - " + p.replace("\n", "\n          "), flush=True)
    finally:
        await sweep.stop()
        from fusescope.model import shutdown_worker

        shutdown_worker()
    return records


def summary(records: list[Record], wall: float) -> str:
    lines = [f"{'file':<68} {'expect':<15} {'views':<6} {'run':<9} {'time':>6}  problems"]
    for r in records:
        lines.append(f"{r.path[-68:]:<68} {r.expect:<15} {len(r.views):<6} {r.ran or '-':<9} "
                     f"{r.seconds:6.1f}  {len(r.problems) or ''}")
    bad = [r for r in records if r.problems]
    lines.append(f"\n{len(records)} files, {sum(len(r.views) for r in records)} view visits, "
                 f"{sum(1 for r in records if r.ran)} emulated runs, {len(bad)} with problems, {wall:.0f} s")
    for r in bad:
        lines.append(f"  {r.path}:")
        lines += ["    - " + p.splitlines()[0][:200] for p in r.problems]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="fusion files (default: every file of the sweep)")
    ap.add_argument("-k", action="append", default=[], help="only files whose path contains this")
    ap.add_argument("--fresh", action="store_true", help="one app per file (default: one app for all)")
    ap.add_argument("--no-run", action="store_true", help="no emulated runs")
    ap.add_argument("--emulate", type=int, default=3, metavar="N",
                    help="run every Nth file on the emulator (default 3; 1: every file)")
    ap.add_argument("--headers", type=int, default=5, metavar="N",
                    help="show the runtime headers (key a) for every Nth file (default 5; slow to render)")
    ap.add_argument("--slow", type=float, default=60.0, metavar="S",
                    help="a file taking longer than S seconds is a problem (default 60)")
    ap.add_argument("--json", help="write the records here")
    args = ap.parse_args()
    start = time.perf_counter()
    records = asyncio.run(main_async(args))
    print(summary(records, time.perf_counter() - start))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in records], indent=1))
    return 1 if any(r.problems for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
