"""Arithmetic and formatting of the benchmark report: minimal bytes, errors against the
reference, bandwidth, ratios, the markdown table. Pure functions (no GPU needed)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import torch

# Implementations timed per fusion, in table order: (key, column title).
IMPLS = [
    ("engine_run", "engine run"),
    ("engine_kernels", "engine kernels"),
    ("engine_run_late", "engine run beside compile"),
    ("eager_ref", "eager (ref)"),
    ("eager_torch", "eager (torch)"),
    ("compile_default", "compile"),
    ("compile_mat", "compile mat"),
    ("nvfuser", "nvFuser"),
]
PEERS = ("compile_default", "compile_mat", "nvfuser")
COMPILE_PEERS = ("compile_default", "compile_mat")


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes of the distinct elements `t` addresses: broadcast (stride 0) axes count once."""
    if t.numel() == 0:
        return 0
    count = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            count *= size
    return count * t.element_size()


def minimal_bytes(inputs: Iterable[Any], outputs: Iterable[Any]) -> int:
    """Each input tensor read once and each output written once (numbers cost nothing)."""
    return sum(tensor_bytes(x) for x in list(inputs) + list(outputs) if isinstance(x, torch.Tensor))


def _is_float(t: torch.Tensor) -> bool:
    return t.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def compare(actual: Sequence[Any], expected: Sequence[Any]) -> dict[str, Any]:
    """How far `actual` is from `expected`, output by output.

    Floating outputs: max |a - e| / max |e| (one relative figure per fusion, the worst).
    Narrow outputs (fp8, packed fp4, integers): the count of bytes that differ (0 = byte-exact).
    """
    if len(actual) != len(expected):
        return {"ok": False, "error": f"{len(actual)} outputs, the reference has {len(expected)}"}
    rel = 0.0
    bytes_differ = 0
    has_float = has_bytes = False
    for a, e in zip(actual, expected):
        if not isinstance(e, torch.Tensor):
            continue
        a = a.detach()
        e = e.detach()
        if _is_float(e):
            has_float = True
            if tuple(a.shape) != tuple(e.shape):
                return {"ok": False, "error": f"shape {tuple(a.shape)} vs the reference's {tuple(e.shape)}"}
            ad, ed = a.double().to(e.device), e.double()
            if not torch.isfinite(ad).all():
                return {"ok": False, "error": "non-finite values"}
            scale = ed.abs().max().item() if ed.numel() else 0.0
            diff = (ad - ed).abs().max().item() if ed.numel() else 0.0
            rel = max(rel, diff / scale if scale > 0 else diff)
        else:
            has_bytes = True
            ab = a.contiguous().view(torch.uint8).reshape(-1).to(e.device)
            eb = e.contiguous().view(torch.uint8).reshape(-1)
            if ab.numel() != eb.numel():
                return {"ok": False, "error": f"{ab.numel()} bytes vs the reference's {eb.numel()}"}
            bytes_differ += int((ab != eb).sum().item())
    out: dict[str, Any] = {"ok": True}
    if has_float:
        out["max_rel_err"] = rel
    if has_bytes:
        out["bytes_differ"] = bytes_differ
    return out


def error_text(cmp: dict[str, Any] | None) -> str:
    if not cmp:
        return "-"
    if not cmp.get("ok"):
        return "MISMATCH"
    parts = []
    if "max_rel_err" in cmp:
        parts.append(f"{cmp['max_rel_err']:.1e}")
    if "bytes_differ" in cmp:
        parts.append("exact" if cmp["bytes_differ"] == 0 else f"{cmp['bytes_differ']} B differ")
    return " ".join(parts) or "-"


def gbps(nbytes: int | None, ms: float | None) -> float | None:
    if not nbytes or not ms or ms <= 0:
        return None
    return nbytes / (ms * 1e-3) / 1e9


def pct(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return 100.0 * part / whole


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return a / b


def geomean(values: Iterable[float | None]) -> float | None:
    vs = [v for v in values if v is not None and v > 0]
    if not vs:
        return None
    return math.exp(sum(math.log(v) for v in vs) / len(vs))


def best_peer(times: dict[str, float | None]) -> tuple[str | None, float | None]:
    """The fastest of torch.compile (both modes) and nvFuser, where they ran."""
    got = [(k, times.get(k)) for k in PEERS if times.get(k) is not None]
    if not got:
        return None, None
    return min(got, key=lambda kv: kv[1])  # type: ignore[arg-type,return-value]


def derive(row: dict[str, Any], copy_gbps: float | None) -> dict[str, Any]:
    """Fill a row's derived figures from its times (ms) and minimal bytes."""
    t = row.get("times_ms", {})
    nbytes = row.get("bytes_min")
    run, kern = t.get("engine_run"), t.get("engine_kernels")
    compile_best = min([v for v in (t.get("compile_default"), t.get("compile_mat")) if v is not None], default=None)
    peer, peer_ms = best_peer(t)
    row["engine_gbps"] = gbps(nbytes, run)
    row["engine_pct_copy"] = pct(row["engine_gbps"], copy_gbps)
    row["engine_kernels_pct_copy"] = pct(gbps(nbytes, kern), copy_gbps)
    row["copy_floor_ms"] = (nbytes / (copy_gbps * 1e9) * 1e3) if nbytes and copy_gbps else None
    row["ratio_engine_eager"] = ratio(run, t.get("eager_ref"))
    row["ratio_engine_eager_torch"] = ratio(run, t.get("eager_torch"))
    row["ratio_engine_compile"] = ratio(beside(t, "compile_default"), compile_best)
    row["best_peer"] = peer
    row["best_peer_ms"] = peer_ms
    row["best_peer_pct_copy"] = pct(gbps(nbytes, peer_ms), copy_gbps)
    row["ratio_engine_best_peer"] = ratio(beside(t, peer), peer_ms) if peer else None
    return row


def beside(times: dict[str, float | None], peer: str) -> float | None:
    """The engine's time measured next to `peer`'s: torch.compile runs in a later phase of the
    benchmark (seconds later), where the engine is timed again, since a GPU's speed drifts
    over a run (the same kernel moved 1-2% between phases); the core phase's time otherwise."""
    late = times.get("engine_run_late") if peer in COMPILE_PEERS else None
    return late if late is not None else times.get("engine_run")


# ---- the table ---------------------------------------------------------------------------------

def _us(ms: float | None) -> str:
    return "-" if ms is None else f"{ms * 1e3:.1f}"


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def table_columns() -> list[str]:
    return (["fusion", "size", "kernels", "engine err", "MB"]
            + [f"{title} us" for _, title in IMPLS]
            + ["GB/s", "% copy", "% copy kern", "eng/eager", "eng/compile", "best peer", "eng/best",
               "compile ms", "2nd compile ms"])


PEER_NAMES = {"compile_default": "compile", "compile_mat": "compile mat", "nvfuser": "nvFuser"}


def table_row(row: dict[str, Any]) -> list[str]:
    t = row.get("times_ms", {})
    nbytes = row.get("bytes_min")
    peer = row.get("best_peer")
    cells = [
        row["name"], row.get("shape", ""),
        "FAILED" if row.get("engine_error") else str(row.get("kernels", "-")),
        error_text(row.get("engine_check")),
        "-" if not nbytes else f"{nbytes / 1e6:.1f}",
    ]
    cells += [_us(t.get(k)) for k, _ in IMPLS]
    cells += [
        _num(row.get("engine_gbps"), ".0f"), _num(row.get("engine_pct_copy"), ".1f"),
        _num(row.get("engine_kernels_pct_copy"), ".1f"),
        _num(row.get("ratio_engine_eager"), ".2f"), _num(row.get("ratio_engine_compile"), ".2f"),
        "-" if peer is None else f"{PEER_NAMES.get(peer, peer)} {_us(row.get('best_peer_ms'))}",
        _num(row.get("ratio_engine_best_peer"), ".2f"),
        _num(row.get("compile_ms"), ".0f")
        + ("" if row.get("compile_ms_median") is None else f" ({row['compile_ms_median']:.0f})"),
        _num(row.get("recompile_ms"), ".0f") + ("" if row.get("recompile_cached") in (None, True) else " (miss)"),
    ]
    return cells


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A markdown table, one line per fusion."""
    head = table_columns()
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for r in rows:
        cells = [c.replace("|", "/") for c in table_row(r)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_report(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The table with a header (device, copy bandwidth) and footnotes (failures, skips, summary)."""
    out = [f"## fusescope benchmarks on {meta.get('device', '?')}", ""]
    cb = meta.get("copy_gbps")
    out.append(f"Device-to-device copy: {_num(cb, '.0f')} GB/s (bytes read + written). "
               f"torch {meta.get('torch', '?')}, triton {meta.get('triton', '?')}, "
               f"nvFuser: {meta.get('nvfuser', '?')}.")
    out.append("Times are medians (us) of CUDA-event-timed calls after warm-up; 'engine run' is "
               "CompiledFusion.run end to end, 'engine kernels' the sum of cf.profile kernel times; "
               "'engine run beside compile' the same, timed again in alternating rounds with both "
               "torch.compile modes, the median of the rounds (the ratios with torch.compile use it); "
               "input sets rotate (two sets at least, four L2s in all); 'eager (ref)' is engine.reference.evaluate of the same definition, 'eager (torch)' a "
               "hand-written torch function, 'compile'/'compile mat' torch.compile of it (default, "
               "max-autotune-no-cudagraphs). GB/s and % copy: minimal bytes over engine run (and kernels) time. "
               "compile ms: define + compile_fusion (first, excluding NVRTC; in brackets the median of "
               "the fresh compiles after it, the fusion cache cleared before each); 2nd: define again + compile_fusion "
               "(a fusion-cache hit: the same definition and input signature) + kernel load.")
    out.append("")
    out.append(format_table(rows))
    singles = [r for r in rows if r.get("kernels") == 1 and not r.get("engine_error")]
    single = [r.get("engine_pct_copy") for r in singles]
    gm = geomean(single)
    gk = geomean(r.get("engine_kernels_pct_copy") for r in singles)
    out.append("")
    out.append(f"Geometric mean of engine % of copy bandwidth over single-kernel fusions: {_num(gm, '.1f')}% "
               f"({len([v for v in single if v])} fusions); from kernel times: {_num(gk, '.1f')}%.")
    notes = []
    skipped: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r.get("engine_error"):
            notes.append(f"- {r['name']}: engine failed in {r['engine_error']}")
        for impl, msg in sorted(r.get("skipped", {}).items()):
            if impl != "engine":
                skipped.setdefault((impl, msg), []).append(r["name"])
        for impl, cmp in sorted(r.get("peer_checks", {}).items()):
            if cmp and (not cmp.get("ok") or cmp.get("bytes_differ") or (cmp.get("max_rel_err") or 0) > 2e-2):
                notes.append(f"- {r['name']}: {impl} output vs reference: {error_text(cmp)} {cmp.get('error', '')}")
    for (impl, msg), names in skipped.items():
        which = "all fusions" if len(names) == len(rows) > 1 else ", ".join(names)
        notes.append(f"- {impl} not timed ({which}): {msg}")
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out)
