"""The compile options a user can change (forwarding, a forced scheduler, streams, the device
model, heuristic overrides, replaced kernels, input sizes) and the parsers for their typed form
(the CLI's flags, the Options tab's fields). Plain data: the engine's Options is made from them
in fusescope/compiler.py."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

DEVICE_MODELS = ("H100", "H200", "A100")  # engine.runtime.device.MODELS, for the Options view


@dataclass(frozen=True)
class CompileOptions:
    """The compile options the debugger lets a user change (a plain mirror of engine Options,
    hashable so that the session keeps one compilation per set of options)."""

    forwarding: bool = True
    force_scheduler: str | None = None
    num_streams: int = 4
    device_model: str | None = None  # None: the real GPU when present, else the H200 model
    # Sorted (key, value) pairs: "vectorization_factor", "lparams.bdimx", "g1.unroll_factor"...
    heuristic_overrides: tuple[tuple[str, int | float | bool], ...] = ()
    # Sorted (segment id, CUDA source) pairs that replace generated kernels.
    kernel_sources: tuple[tuple[int, str], ...] = ()
    # Sorted (name, sizes) pairs: the sizes of a fusion without an inputs list, at which it is
    # compiled and run ("T0" -> (4096, 8192), a symbolic size "i0" or a scalar input "i4" ->
    # (64,), "*" -> (1024,) for every other symbolic size); see engine.frontend.example_inputs.
    input_sizes: tuple[tuple[str, tuple[int | float, ...]], ...] = ()

    def with_(self, **changes: Any) -> CompileOptions:
        """A copy with `changes`; dict values for the three tables are sorted into pairs."""
        for name in ("heuristic_overrides", "kernel_sources", "input_sizes"):
            if isinstance(changes.get(name), dict):
                changes[name] = tuple(sorted(changes[name].items()))
        if "input_sizes" in changes:
            changes["input_sizes"] = tuple((k, tuple(v)) for k, v in changes["input_sizes"])
        return replace(self, **changes)

    def sizes(self) -> dict[str, list[int | float]] | None:
        """input_sizes as FusionDefinition.example_inputs takes them; None when there are none."""
        return {k: list(v) for k, v in self.input_sizes} or None

    def describe(self) -> str:
        parts = [f"forwarding {'on' if self.forwarding else 'off'}"]
        if self.force_scheduler:
            parts.append(f"scheduler forced to {self.force_scheduler}")
        parts.append(f"{self.num_streams} streams")
        if self.device_model:
            parts.append(f"device model {self.device_model}")
        parts += [f"{k}={v}" for k, v in self.heuristic_overrides]
        parts += [f"g{sid} kernel replaced" for sid, _ in self.kernel_sources]
        if self.input_sizes:
            parts.append("sizes " + " ".join(f"{k}={','.join(map(str, v))}" for k, v in self.input_sizes))
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {"forwarding": self.forwarding, "force_scheduler": self.force_scheduler,
                "num_streams": self.num_streams, "device_model": self.device_model,
                "heuristic_overrides": dict(self.heuristic_overrides),
                "kernel_sources": {str(k): v for k, v in self.kernel_sources},
                "input_sizes": {k: list(v) for k, v in self.input_sizes}}

    @classmethod
    def from_dict(cls, d: object) -> CompileOptions:
        """The inverse of to_dict; ValueError names the field that is wrong."""
        if not isinstance(d, dict):
            raise ValueError(f"options must be an object, got {type(d).__name__}")
        unknown = sorted(set(d) - set(cls().to_dict()))
        if unknown:
            raise ValueError(f"options: unknown field {unknown[0]!r}")
        fwd = d.get("forwarding", True)
        force = d.get("force_scheduler")
        streams = d.get("num_streams", 4)
        device = d.get("device_model")
        overrides = d.get("heuristic_overrides", {})
        sources = d.get("kernel_sources", {})
        sizes = d.get("input_sizes", {})
        if not isinstance(fwd, bool):
            raise ValueError("options.forwarding must be true or false")
        if force is not None and not isinstance(force, str):
            raise ValueError("options.force_scheduler must be a string or null")
        if not isinstance(streams, int) or isinstance(streams, bool) or not 1 <= streams <= 64:
            raise ValueError("options.num_streams must be an integer from 1 to 64")
        if device is not None and device not in DEVICE_MODELS:
            raise ValueError(f"options.device_model must be one of {', '.join(DEVICE_MODELS)} or null")
        if not isinstance(overrides, dict) or not all(
                isinstance(k, str) and isinstance(v, int | float | bool) for k, v in overrides.items()):
            raise ValueError("options.heuristic_overrides must map names to numbers or booleans")
        if not isinstance(sources, dict) or not all(
                isinstance(k, str) and k.isdigit() and isinstance(v, str) for k, v in sources.items()):
            raise ValueError("options.kernel_sources must map segment ids to CUDA source text")
        if not isinstance(sizes, dict) or not all(
                isinstance(k, str) and isinstance(v, list) and v and all(
                    isinstance(x, int | float) and not isinstance(x, bool) for x in v) for k, v in sizes.items()):
            raise ValueError("options.input_sizes must map input names to lists of numbers")
        return cls(fwd, force, streams, device, tuple(sorted(overrides.items())),
                   tuple(sorted((int(k), v) for k, v in sources.items())),
                   tuple(sorted((k, tuple(v)) for k, v in sizes.items())))


class OptionError(ValueError):
    """An option the user typed is malformed; the message is one line naming it."""


def parse_heuristic(text: str) -> tuple[str, int | float | bool]:
    """"KEY=VALUE" (e.g. "g1.vectorization_factor=2") -> (key, int, float or bool value)."""
    key, sep, raw = (part.strip() for part in text.partition("="))
    if not sep or not key or not raw:
        raise OptionError(f"heuristic override {text!r}: write KEY=VALUE, e.g. vectorization_factor=2")
    if raw.lower() in ("true", "false"):
        return key, raw.lower() == "true"
    for kind in (int, float):
        try:
            return key, kind(raw)
        except ValueError:
            pass
    raise OptionError(f"heuristic override {key!r}: {raw!r} is not a number or true/false")


def parse_size(text: str) -> tuple[str, tuple[int | float, ...]]:
    """`--size` text -> (name, numbers): "T0=4096,8192" (an input's shape, or its symbolic
    sizes), "i0=64" (a symbolic size or a scalar input's value), "1024" (every other symbolic
    size, the name "*")."""
    key, sep, raw = (part.strip() for part in text.partition("="))
    if not sep:
        key, raw = "*", key
    values: list[int | float] = []
    for part in raw.split(","):
        try:
            values.append(int(part))
        except ValueError:
            try:
                values.append(float(part))
            except ValueError:
                raise OptionError(f"--size {text!r}: write N, or NAME=N[,N...] (e.g. T0=4096,8192)") from None
    if not key or not values or key == "*" and (len(values) != 1 or not isinstance(values[0], int)):
        raise OptionError(f"--size {text!r}: write N, or NAME=N[,N...] (e.g. T0=4096,8192)")
    return key, tuple(values)


def read_kernel_source(text: str) -> tuple[int, str]:
    """"N=PATH.cu" -> (segment N, the file's CUDA text)."""
    sid, sep, path = (part.strip() for part in text.partition("="))
    if not sep or not sid.lstrip("g").isdigit() or not path:
        raise OptionError(f"kernel source {text!r}: write N=PATH.cu (N a segment id)")
    try:
        return int(sid.lstrip("g")), Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise OptionError(f"kernel source for segment {sid}: cannot read {path}: "
                          f"{getattr(e, 'strerror', None) or e}") from None
