"""Session bundles: one versioned JSON file with the fusion's source, its input specs, the
option sets used, the runs and their results, the device and the versions. A bundle reopens
anywhere (no GPU needed) and shows the recorded results.

Loading treats the file as hostile: every field is checked for its type, the runs' references
to option sets and to the run before them must resolve and must not loop, and the fusion source
goes through the engine's parser (engine.loads_fusion), which never executes it. Every refusal
is a BundleError with one line naming what is wrong.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from fusescope.model import (
    CompileOptions,
    LoadError,
    RunResult,
    Session,
    input_specs,
    run_from_dict,
    session_from_source,
)

FORMAT = "fusescope-bundle"
VERSION = 1
MAX_BYTES = 64 << 20  # a bundle is text and figures; anything bigger is not one of ours


class BundleError(Exception):
    """A bundle cannot be written or read; the message is one line for the user."""


def to_dict(session: Session) -> dict[str, Any]:
    """The bundle of `session`: each distinct option set once, runs referring to it."""
    option_ids: dict[CompileOptions, str] = {}
    runs = []
    for k, run in enumerate(session.runs):
        oid = option_ids.setdefault(run.options, f"o{len(option_ids)}")
        runs.append({"id": f"r{k}", "options": oid, "previous": f"r{k - 1}" if k else None,
                     "result": run.to_dict()})
    return {
        "format": FORMAT, "version": VERSION,
        "fusion": {"title": session.title, "source": session.fusion_source()},
        "inputs": input_specs(session),
        "option_sets": {oid: o.to_dict() for o, oid in option_ids.items()},
        "runs": runs,
        "device": next((r.device for r in reversed(session.runs) if r.device), ""),
        "versions": _versions(),
    }


def save(session: Session, path: str | Path) -> Path:
    p = Path(path)
    try:
        p.write_text(json.dumps(to_dict(session), indent=1) + "\n", encoding="utf-8")
    except OSError as e:
        raise BundleError(f"cannot write the bundle {p}: {e.strerror or e}") from None
    return p


def load(path: str | Path) -> Session:
    """Read a bundle into a session whose runs are the recorded ones."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise BundleError(f"{p} is larger than {MAX_BYTES >> 20} MiB: not a fusescope bundle")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BundleError(f"cannot read the bundle {p}: {getattr(e, 'strerror', None) or e}") from None
    return loads(text, p.name)


def loads(text: str, name: str = "bundle") -> Session:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BundleError(f"{name}: not valid JSON (truncated?): {e.msg} at line {e.lineno} column {e.colno}") from None
    try:
        return _session(data, name)
    except (ValueError, TypeError) as e:
        raise BundleError(f"{name}: {e}") from None


def _session(data: Any, name: str) -> Session:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a fusescope bundle (no \"format\": \"{FORMAT}\")")
    version = data.get("version")
    if version != VERSION:
        raise ValueError(f"bundle version {version!r} is not supported (this fusescope reads version {VERSION})")
    fusion = _typed(data, "fusion", dict)
    source = _typed(fusion, "source", str, "fusion")
    title = _typed(fusion, "title", str, "fusion")
    options = {oid: CompileOptions.from_dict(o) for oid, o in _typed(data, "option_sets", dict).items()}
    runs = _runs(_typed(data, "runs", list), options)
    _typed(data, "inputs", list)
    _typed(data, "versions", dict)
    try:
        session = session_from_source(source, title)
    except LoadError as e:
        raise ValueError(f"its fusion source is refused: {e}") from None
    session.runs = runs
    return session


def _runs(items: list[Any], options: dict[str, CompileOptions]) -> list[RunResult]:
    """The runs in history order, after checking every reference between them."""
    by_id: dict[str, dict[str, Any]] = {}
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"runs[{k}] must be an object")
        rid = _typed(item, "id", str, f"runs[{k}]")
        if rid in by_id:
            raise ValueError(f"runs: two runs have the id {rid!r}")
        by_id[rid] = item
    for rid, item in by_id.items():
        oid = item.get("options")
        if oid not in options:
            raise ValueError(f"run {rid} refers to option set {oid!r}, which the bundle does not have")
        prev = item.get("previous")
        if prev is not None and prev not in by_id:
            raise ValueError(f"run {rid} refers to a previous run {prev!r}, which the bundle does not have")
        _no_cycle(rid, by_id)
    out = []
    for rid, item in by_id.items():
        result = run_from_dict(item.get("result"), f"run {rid}.result")
        if result.options != options[item["options"]]:
            raise ValueError(f"run {rid}: its result's options differ from option set {item['options']}")
        out.append(result)
    return out


def _no_cycle(rid: str, by_id: dict[str, dict[str, Any]]) -> None:
    seen = {rid}
    prev = by_id[rid].get("previous")
    while prev is not None:
        if prev in seen:
            raise ValueError(f"runs: the 'previous' references of run {rid} loop back to {prev}")
        seen.add(prev)
        prev = by_id[prev].get("previous")


def _typed(d: dict[str, Any], key: str, kind: type, where: str = "bundle") -> Any:
    if key not in d:
        raise ValueError(f"{where}.{key} is missing")
    if not isinstance(d[key], kind):
        raise ValueError(f"{where}.{key} must be {kind.__name__}, got {type(d[key]).__name__}")
    return d[key]


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for package in ("fusescope", "torch", "textual"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    return out
