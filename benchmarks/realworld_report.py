"""The real-size sweep's report (benchmarks/realworld.py): its JSON lines read back and merged (one
file per shard, each case once: the last record of a key wins), a summary, a row per case worst
engine/nvFuser ratio first, the kernels that use local memory and the failures, as Markdown
and JSON. Pure functions of the records: no GPU needed."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

LOCAL_LIMIT = 1024  # bytes of local memory per thread the GPU tests allow


def read_lines(paths: Iterable[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(records, metas, in flight) of JSON-lines files and folders (their realworld*.jsonl and
    progress*.json: a progress file left behind names a case whose process was killed)."""
    files: list[Path] = []
    inflight: list[dict[str, Any]] = []
    for p in paths:
        if p.is_dir():
            files += sorted(p.glob("realworld*.jsonl"))
            inflight += [json.loads(q.read_text()) for q in sorted(p.glob("progress*.json"))]
        else:
            files.append(p)
    by_key: dict[str, dict[str, Any]] = {}
    metas: list[dict[str, Any]] = []
    for f in files:
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a killed process
            if "meta" in r:
                metas.append(r["meta"])
            elif "key" in r:
                by_key[r["key"]] = r
    done = set(by_key)
    return list(by_key.values()), metas, [p for p in inflight if p.get("key") not in done]


def _max_local(r: dict[str, Any]) -> int | None:
    vals = [k["local_bytes"] for k in r.get("kernels", []) if k.get("local_bytes") is not None]
    return max(vals) if vals else None


def _nvf_ms(r: dict[str, Any]) -> float | None:
    return r.get("nvfuser", {}).get("time", {}).get("median_ms")


def summarize(records: list[dict[str, Any]], corpus: list[str] | None = None,
              inflight: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The figures the report opens with. `corpus` (script names) adds those not swept."""
    cases = [r for r in records if r.get("size") != "load"]
    scripts = sorted({r["script"] for r in records})
    unopened = sorted({r["script"] for r in records if r.get("size") == "load"})
    ratios = [r["ratio"] for r in cases if r.get("ratio")]
    both = [r for r in cases if r.get("engine_kernels") is not None and r.get("nvfuser", {}).get("kernels") is not None]
    kernels = [dict(k, case=r["key"]) for r in cases for k in r.get("kernels", [])]
    local = [k for k in kernels if (k.get("local_bytes") or 0) > 0]
    compiled = [r for r in cases if r.get("compile_s") is not None]
    slowest = max(compiled, key=lambda r: r["compile_s"], default=None)
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r.get("status", "?")] = statuses.get(r.get("status", "?"), 0) + 1
    out: dict[str, Any] = {
        "scripts": len(scripts), "opened": len(scripts) - len(unopened), "cases": len(cases),
        "compiled": len(compiled), "matched": sum(1 for r in cases if r.get("matched")),
        "statuses": dict(sorted(statuses.items())),
        "ratio_cases": len(ratios),
        "ratio_geomean": math.exp(statistics.fmean(math.log(x) for x in ratios)) if ratios else None,
        "kernel_count_cases": len(both),
        "kernels_at_most_nvfuser": sum(1 for r in both if r["engine_kernels"] <= r["nvfuser"]["kernels"]),
        "kernels": len(kernels), "local_kernels": len(local),
        "local_over_limit": sum(1 for k in local if k["local_bytes"] > LOCAL_LIMIT),
        "max_compile_s": slowest["compile_s"] if slowest else None,
        "max_compile_case": slowest["key"] if slowest else None,
        "max_load_s": max((r.get("load_s") or 0.0 for r in compiled), default=None),
        "nvfuser_failed": sum(1 for r in cases if r.get("nvfuser", {}).get("error")),
        "nvfuser_mismatched": sum(1 for r in cases if r.get("nvfuser", {}).get("matched") is False),
        "in_flight": [f"{p.get('key')} ({p.get('stage')})" for p in inflight or []],
    }
    if corpus is not None:
        out["not_swept"] = sorted(set(corpus) - set(scripts))
    return out


def _us(ms: float | None) -> str:
    return "-" if ms is None else f"{ms * 1e3:.1f}" if ms < 10 else f"{ms * 1e3:.0f}"


def _shapes(r: dict[str, Any]) -> str:
    """The largest input (dtype, sizes) and how many more there are."""
    shapes = r.get("shapes") or []
    if not shapes:
        return "-"
    dtype, big = max(shapes, key=lambda s: math.prod(s[1]))
    more = f" +{len(shapes) - 1}" if len(shapes) > 1 else ""
    return f"{dtype} {'x'.join(map(str, big)) or 'scalar'}{more}"


def _status(r: dict[str, Any]) -> str:
    text = r.get("status", "?")
    if r.get("error"):
        text += f" ({r.get('stage')}: {r['error'][:80]})"
    elif r.get("detail"):
        text += f" ({r['detail'][:80]})"
    nv = r.get("nvfuser", {})
    if r.get("partial"):
        text += "; nvFuser did not finish (no resume recorded why)"
    elif nv.get("error"):
        text += f"; nvFuser {nv.get('stage')}: {nv['error'][:60]}"
    elif nv.get("matched") is False:
        text += "; nvFuser differs from the reference"
    return text.replace("|", "/")


def _cell(v: Any, spec: str = "{}") -> str:
    return "-" if v is None else spec.format(v)


def sort_key(r: dict[str, Any]) -> tuple[int, float, str]:
    """Worst engine/nvFuser ratio first, then cases without a ratio by name."""
    return (0, -r["ratio"], r["key"]) if r.get("ratio") else (1, 0.0, r["key"])


def markdown(summary: dict[str, Any], records: list[dict[str, Any]], metas: list[dict[str, Any]]) -> str:
    s = summary
    meta = metas[-1] if metas else {}
    lines = ["# Real-size sweep: the engine against nvFuser", ""]
    if meta:
        lines += [f"{meta.get('device', '?')}, torch {meta.get('torch', '?')}, {meta.get('nvfuser', 'no nvFuser')}; "
                  f"engine {meta.get('commit', '?')}; {len({m.get('shard') for m in metas})} shard(s), "
                  f"{len(metas)} process start(s).", ""]
    geo = _cell(s["ratio_geomean"], "{:.3f}")
    share = (f"{s['kernels_at_most_nvfuser']} of {s['kernel_count_cases']}"
             f" ({100 * s['kernels_at_most_nvfuser'] / s['kernel_count_cases']:.0f}%)") if s["kernel_count_cases"] else "-"
    lines += [
        "## Summary", "",
        f"- scripts swept {s['scripts']}, opened {s['opened']}; cases (script x size) {s['cases']}, "
        f"compiled {s['compiled']}, matched the reference {s['matched']}",
        f"- statuses: {', '.join(f'{k} {v}' for k, v in s['statuses'].items())}",
        f"- engine / nvFuser time (cf.run against nvFuser's execute), geometric mean over the "
        f"{s['ratio_cases']} cases both ran: {geo}",
        f"- engine kernels per call <= nvFuser's: {share}",
        f"- kernels with local memory: {s['local_kernels']} of {s['kernels']}, over {LOCAL_LIMIT} bytes a "
        f"thread: {s['local_over_limit']}",
        f"- longest compile: {_cell(s['max_compile_s'], '{:.2f}')} s ({s['max_compile_case']}); longest "
        f"kernel build and load (NVRTC; g++ on the emulator): {_cell(s['max_load_s'], '{:.2f}')} s",
        f"- nvFuser failed on {s['nvfuser_failed']} cases, differed from the reference on {s['nvfuser_mismatched']}",
    ]
    if s.get("in_flight"):
        lines.append(f"- killed while running (no record): {', '.join(s['in_flight'])}")
    if s.get("not_swept"):
        shown = ", ".join(s["not_swept"][:20]) + (" ..." if len(s["not_swept"]) > 20 else "")
        lines.append(f"- not swept ({len(s['not_swept'])}): {shown}")
    lines += ["", "## Cases, worst ratio first", "",
              "| script | size | inputs | engine us (cf.run) | engine us (fd.execute) | nvFuser us | ratio | "
              "kernels engine/nvFuser | max local B | max error | status |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in sorted(records, key=sort_key):
        nv = r.get("nvfuser", {})
        kern = f"{_cell(r.get('engine_kernels'))}/{_cell(nv.get('kernels'))}"
        lines.append(
            f"| {r['script']} | {r.get('label', r.get('size'))} | {_shapes(r)} | "
            f"{_us(r.get('engine_run', {}).get('median_ms'))} | {_us(r.get('engine_execute', {}).get('median_ms'))} | "
            f"{_us(_nvf_ms(r))} | {_cell(r.get('ratio'), '{:.2f}')} | {kern} | {_cell(_max_local(r))} | "
            f"{_cell(r.get('max_abs_err'), '{:.2e}')} | {_status(r)} |")
    local = sorted(((r, k) for r in records for k in r.get("kernels", []) if (k.get("local_bytes") or 0) > 0),
                   key=lambda rk: -rk[1]["local_bytes"])
    if local:
        lines += ["", "## Kernels with local memory", "",
                  "| case | kernel | scheduler | local B / thread | registers | occupancy | us |",
                  "|---|---|---|---:|---:|---:|---:|"]
        lines += [f"| {r['key']} | {k['name']} | {k['scheduler']} | {k['local_bytes']} | {_cell(k.get('registers'))} | "
                  f"{_cell(k.get('occupancy'), '{:.0%}')} | {_cell(k.get('time_us'), '{:.1f}')} |" for r, k in local]
    failed = [r for r in sorted(records, key=lambda r: r["key"]) if r.get("error") or r.get("nvfuser", {}).get("error")]
    if failed:
        lines += ["", "## Errors", ""]
        for r in failed:
            if r.get("error"):
                lines.append(f"- {r['key']}, engine, {r.get('stage')}: {r['error']}")
            if r.get("nvfuser", {}).get("error"):
                lines.append(f"- {r['key']}, nvFuser, {r['nvfuser'].get('stage')}: {r['nvfuser']['error']}")
    return "\n".join(lines) + "\n"


def write_report(paths: Iterable[Path], out_dir: Path, name: str, corpus: list[str] | None = None) -> str:
    """Merge the JSON lines of `paths` and write out_dir/name.md and .json; the Markdown."""
    records, metas, inflight = read_lines(paths)
    summary = summarize(records, corpus, inflight)
    text = markdown(summary, records, metas)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(text)
    rows = sorted(records, key=sort_key)
    (out_dir / f"{name}.json").write_text(json.dumps({"meta": metas, "summary": summary, "rows": rows}, indent=1))
    return text
