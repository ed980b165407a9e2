"""Command-palette (ctrl+p) commands that speak the domain: open a sample, show a tensor."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from fusescope import samples

if TYPE_CHECKING:
    from fusescope.app import FusescopeApp


class FusionCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app: FusescopeApp = self.app  # type: ignore[assignment]
        out: list[tuple[str, str, Callable[[], object]]] = [
            ("Open file…", "Open a fusion file by path", app.action_open_file),
            ("Reload", "Read the current file again", app.action_reload),
            ("Show fusion IR", "The Fusion IR tab", app.action_show_ir),
            ("Show schedule", "Scheduler verdicts, parameters and scheduled IR (whole fusion)", app.action_show_schedule),
        ]
        for s in samples.list_samples():
            out.append((f"Open sample: {s.name}", s.summary or str(s.path), partial(app.open_path, str(s.path))))
        if app.session is not None:
            for info in app.session.tensors.values():
                out.append(
                    (f"Show tensor: {info.name}", f"{info.role} · {info.text}", partial(app.show_tensor, info.name))
                )
        return out

    async def discover(self) -> Hits:
        for text, help_text, command in self._commands():
            yield DiscoveryHit(text, command, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, command in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
