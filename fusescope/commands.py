"""Command-palette (ctrl+p) commands that speak the domain: open a sample, show a view, run,
select a segment or a tensor."""

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
            ("Show schedule", "Per segment: the accepting scheduler, parameters and their derivation, verdicts, scheduled IR", app.action_show_schedule),
            ("Show segments", "The segment graph and the segmenter's decision log", app.action_show_segments),
            ("Show CUDA", "Each segment's kernel source, launch configuration and kernel IR", app.action_show_cuda),
            ("Show run and profile", "The per-segment figures of the last run", app.action_show_run),
            ("Show host IR", "The host program and, after a cuda run, its stream timeline", app.action_show_host_ir),
            ("Show options", "Forwarding, forced scheduler, heuristic overrides, device model, streams, "
             "replacement kernels; recompile and compare", app.action_show_options),
            ("Run on the emulator", "The generated CUDA compiled with g++ and run on the CPU, checked "
             "against the reference", partial(app.start_run, "emulate")),
            ("Run on the reference", "torch on the CPU, segment by segment", partial(app.start_run, "reference")),
            ("Run on the GPU (cuda)", "Needs a CUDA GPU; with profiling: GB/s, % of peak, registers, local memory, occupancy",
             partial(app.start_run, "cuda")),
            ("Save session bundle…", "The fusion, its options and every run as versioned JSON (reopens "
             "without a GPU)", app.action_save_bundle),
            ("Export…", "The current view's text to a file, the Run table to .csv, or a screenshot to .svg",
             app.action_export),
            (f"Compile with forwarding {'off' if app.options.forwarding else 'on'}",
             "Recompile with the segmenter's input forwarding switched", app.toggle_forwarding),
        ]
        for s in samples.list_samples():
            out.append((f"Open sample: {s.name}", s.summary or str(s.path), partial(app.open_path, str(s.path))))
        if app.session is not None:
            compiled = app.session.compiled(app.options)
            for seg in compiled.segments if compiled is not None else []:
                out.append((f"Select segment: g{seg.id} ({seg.scheduler})",
                            f"{seg.ops} ops · in {', '.join(seg.inputs) or '-'} · out {', '.join(seg.outputs)}",
                            partial(app.select_segment, seg.id)))
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
