"""`fusescope serve`: the TUI through textual-serve when installed, else one line and exit 2.
Both paths without network: the package is hidden or replaced by a recording fake."""

from __future__ import annotations

import sys
import types

import pytest

from fusescope.cli import main


def test_serve_without_textual_serve_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "textual_serve", None)  # import fails as if not installed
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err == "fusescope: error: fusescope serve needs the textual-serve package: pip install textual-serve\n"


def test_serve_runs_the_tui_command_through_textual_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, int]] = []

    class Server:
        def __init__(self, command: str, host: str, port: int, title: str) -> None:
            self.args = (command, host, port)

        def serve(self) -> None:
            calls.append(self.args)

    fake = types.ModuleType("textual_serve.server")
    fake.Server = Server  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "textual_serve", types.ModuleType("textual_serve"))
    monkeypatch.setitem(sys.modules, "textual_serve.server", fake)
    assert main(["serve", "softmax", "--port", "8123"]) == 0
    (command, host, port), = calls
    assert command.startswith(sys.executable) and " -m fusescope " in command
    assert command.endswith("softmax.py") and (host, port) == ("localhost", 8123)
    assert main(["serve", "/no/such/file.py"]) == 2 and len(calls) == 1  # refused before serving
