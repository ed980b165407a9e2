"""Writing fusion files: replays `fd.recorded_calls` in nvFuser's repro format.

One line per frontend call in creation order, so loading the file rebuilds the same
IR with the same names, and writing it again gives the same text.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Sequence
from typing import Any

import torch

from engine.dtypes import from_torch
from engine.errors import FusionFileError
from engine.frontend.definition import FrontendCall, FusionDefinition
from engine.frontend.input_spec import COMPARISONS, SPEC_KINDS, TORCH_DTYPE_NAMES, InputSpec
from engine.frontend.pyread import enum_namespaces
from engine.ir.exprs import ReductionOp, RFactorLinearOp, RFactorMatmulOp, RFactorReductionOp
from engine.ir.iterdomain import ParallelType, Split, transforms_between
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView


def save_fusion(fd: FusionDefinition, path: str | os.PathLike[str], inputs: Sequence[Any] | None = None) -> None:
    """Write `fd` as a fusion file; `inputs` (tensors) replace its input specs when given."""
    text = dumps_fusion(fd, inputs=inputs)
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        f.write(text)


def dumps_fusion(fd: FusionDefinition, inputs: Sequence[Any] | None = None) -> str:
    """The fusion file text of `fd`: nvFuser's python-frontend repro format."""
    return _Writer(fd).write(inputs)


class _Writer:
    def __init__(self, fd: FusionDefinition | None) -> None:
        self.fd = fd
        self.names: dict[int, str] = {}  # id(Val) -> name in the file
        self.counter = 0
        self.enums: set[str] = set()
        self.lines: list[str] = []
        # The nameable enum classes, looked up once per file rather than per enum argument
        # (the fusion cache writes every definition it is asked to compile).
        self._namespaces: dict[str, type[enum.Enum]] | None = None

    def write(self, inputs: Sequence[Any] | None) -> str:
        assert self.fd is not None
        for call in self.fd.recorded_calls:
            self.call(call)
        meshed = self.device_lines()
        specs = [InputSpec.from_tensor(t) for t in inputs] if inputs is not None else self.fd.input_specs
        nvf_names = ["FusionDefinition", "DataType"] + sorted(self.enums - {"DataType"})
        if meshed:
            # The multidevice API is nvfuser_direct's (nvFuser's direct bindings).
            out = ["import torch", "import nvfuser_direct as nvfuser",
                   f"from nvfuser_direct import {', '.join(nvf_names)}", "", ""]
        else:
            out = ["import torch", f"from nvfuser import {', '.join(nvf_names)}", "", ""]
        out.append("def nvfuser_fusion_id0(fd : FusionDefinition) -> None :")
        out.extend("    " + line for line in self.lines or ["pass"])
        out += ["", "", "with FusionDefinition() as fd:", "    nvfuser_fusion_id0(fd)", ""]
        if specs:
            out.append("inputs = [")
            out.extend(f"    {_spec_source(s)}," for s in specs)
            out += ["]", "fd.execute(inputs)"]
        return "\n".join(out) + "\n"

    def call(self, call: FrontendCall) -> None:
        args = [self.arg(a) for a in call.args]
        args += [f"{k}={self.arg(v)}" for k, v in call.kwargs.items()]
        prefix = {"fd": "fd.", "ops": "fd.ops.", "sched": "fd.sched."}[call.target]
        text = f"{prefix}{call.name}({', '.join(args)})"
        result = call.result
        if isinstance(result, (TensorView, Scalar)):
            self.lines.append(f"{self.name_for(result)} = {text}")
        elif isinstance(result, (tuple, list)) and result and all(
                isinstance(r, (TensorView, Scalar)) for r in result):
            names = [self.name_for(r) for r in result]
            self.lines.append(f"{', '.join(names)} = {text}")
        else:
            self.lines.append(text)

    def device_lines(self) -> bool:
        """Each tensor's device mesh, loop splits and parallel types as the calls that make
        them (`T0.set_device_mesh(mesh0)`, `T0.outer_split(0, 2)`,
        `T0.axis(0).parallelize(ParallelType.mesh_x)`), and the rfactors made by the
        tensor's own method in the definition (`T3 = T2.rfactor(axes=[3])`, after the
        splits of the reduction axes it needs); whether there were any."""
        meshes: dict[Any, str] = {}
        lines: list[str] = []
        # Rfactors that a recorded call (fd.sched.rfactor, a scheduler) made are made again by it.
        by_method = {id(p) for p in self.fd.method_rfactors}
        written: set[int] = set()

        def mesh_line(tv: TensorView, name: str) -> None:
            mesh = tv.__dict__.get("device_mesh")
            if mesh is None:
                return
            if mesh not in meshes:
                meshes[mesh] = f"mesh{len(meshes)}"
                lines.append(f"{meshes[mesh]} = nvfuser.multidevice.DeviceMesh({mesh.python()})")
            lines.append(f"{name}.set_device_mesh({meshes[mesh]})")

        def loop_lines(tv: TensorView, name: str) -> None:
            lines.extend(f"{name}.{call}" for call in loop_calls(tv))
            for k, i in enumerate(tv.domain.loop):
                if i.parallel_type in _WRITTEN_PARALLEL:
                    lines.append(f"{name}.axis({k}).parallelize({self.arg(i.parallel_type)})")

        for tv in self.fd.fusion.vals():
            name = self.names.get(id(tv))
            if not isinstance(tv, TensorView) or name is None or id(tv) in written:
                continue
            written.add(id(tv))
            mesh = tv.__dict__.get("device_mesh")
            producer = rfactor_producer(tv)
            if producer is not None and id(producer) not in by_method:
                producer = None
            if producer is None:
                if mesh is not None:
                    mesh_line(tv, name)
                    loop_lines(tv, name)
                continue
            # The rfactor copies the tensor's mesh to the producer: set before it when they share it.
            p_mesh = producer.__dict__.get("device_mesh")
            first = mesh is not None and p_mesh == mesh
            if first:
                mesh_line(tv, name)
            lines.extend(f"{name}.{call}" for call in split_calls(tv, producer.domain.maybe_root, producer.domain.logical))
            axes = [k for k, i in enumerate(producer.domain.logical) if i.is_reduction]
            p_name = self.name_for(producer)
            written.add(id(producer))
            lines.append(f"{p_name} = {name}.rfactor(axes={axes})")
            if p_mesh is not None and not first:
                mesh_line(producer, p_name)
            loop_lines(producer, p_name)
            if mesh is not None and not first:
                mesh_line(tv, name)
            loop_lines(tv, name)
        self.lines.extend(lines)
        return bool(lines)

    def name_for(self, v: TensorView | Scalar) -> str:
        # nvFuser numbers the frontend's values with one counter: T0, T1, S2, T3, ...
        name = f"{'T' if isinstance(v, TensorView) else 'S'}{self.counter}"
        self.counter += 1
        self.names[id(v)] = name
        return name

    def arg(self, v: Any) -> str:
        if isinstance(v, (TensorView, Scalar)):
            name = self.names.get(id(v))
            if name is not None:
                return name
            if isinstance(v, Scalar) and v.is_const:
                # A constant made outside the frontend: define it first, as nvFuser's repros do.
                s = FrontendCall("fd", "define_scalar", (v.value,), {"dtype": v.dtype}, v)
                self.call(s)
                return self.names[id(v)]
            what = v.short_name if isinstance(v, TensorView) else v.inline()
            raise FusionFileError(f"cannot write {what}: it was not made through the fusion "
                                  "definition's frontend (fd.define_*, fd.ops, fd.sched)")
        if isinstance(v, bool) or v is None:
            return repr(v)
        if isinstance(v, int):
            return repr(int(v))
        if isinstance(v, float):
            if math.isnan(v):
                return "float('nan')"
            if math.isinf(v):
                return "float('inf')" if v > 0 else "float('-inf')"
            return repr(v)
        if isinstance(v, complex):
            return f"complex({self.arg(v.real)}, {self.arg(v.imag)})"
        if isinstance(v, str):
            return repr(v)
        if isinstance(v, torch.dtype):
            v = from_torch(v)
        if isinstance(v, enum.Enum):
            cls_name = type(v).__name__
            if self._namespaces is None:
                self._namespaces = enum_namespaces()
            if self._namespaces.get(cls_name) is not type(v):
                raise FusionFileError(f"cannot write {v!r}: {cls_name} is not nameable in a fusion file")
            self.enums.add(cls_name)
            return f"{cls_name}.{v.name}"
        if isinstance(v, list):
            return "[" + ", ".join(self.arg(x) for x in v) + "]"
        if isinstance(v, tuple):
            items = [self.arg(x) for x in v]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{self.arg(k)}: {self.arg(x)}" for k, x in v.items()) + "}"
        raise FusionFileError(f"cannot write argument {v!r} of type {type(v).__name__}")


_RFACTORED = (RFactorReductionOp, RFactorMatmulOp, RFactorLinearOp)
_WRITTEN_PARALLEL = (ParallelType.mesh_x, ParallelType.mesh_y, ParallelType.mesh_z, ParallelType.stream)


def loop_calls(tv: TensorView) -> list[str]:
    """The splits (and a final reorder) that make `tv`'s loop domain from its logical one."""
    return split_calls(tv, tv.domain.logical, tv.domain.loop)


def split_calls(tv: TensorView, start: Sequence[Any], end: Sequence[Any]) -> list[str]:
    """The splits (and a final reorder) that make the ids `end` from `start` (tv's)."""
    cur = list(start)
    calls: list[str] = []
    for t in transforms_between(list(start), list(end)):
        if not isinstance(t, Split):
            raise FusionFileError(f"cannot write {tv.short_name}'s loop domain: only splits of a tensor with a "
                                  f"device mesh or an rfactor are written, not {t.kind}")
        pos = cur.index(t.in_id)
        f = t.factor.inline()
        calls.append(f"{'inner' if t.inner_split else 'outer'}_split({pos}, {f})")
        cur[pos:pos + 1] = [t.outer, t.inner]
    loop = list(end)
    if cur != loop:
        calls.append(f"reorder({ {k: loop.index(i) for k, i in enumerate(cur) if loop.index(i) != k} })")
    return calls


def rfactor_producer(tv: TensorView) -> TensorView | None:
    """The partial result `tv` sums when an rfactor made it (engine.ir.rfactor): the input
    of its reduction, itself an rfactor'ed reduction, matmul or linear."""
    e = tv.definition
    if type(e) is not ReductionOp:
        return None
    p = e.input
    return p if isinstance(p, TensorView) and isinstance(p.definition, _RFACTORED) else None


def _tuple_src(t: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(x)) for x in t) + ("," if len(t) == 1 else "") + ")"


def _torch_dtype_src(d: torch.dtype) -> str:
    return f"torch.{TORCH_DTYPE_NAMES.get(d, str(d).removeprefix('torch.'))}"


def _spec_source(s: InputSpec) -> str:
    """An inputs entry that reads back as `s`: the torch call, arithmetic and a comparison
    on its values, a dtype change, then `.as_strided(...)` for the view and `.view(dtype)`."""
    num = _Writer(None).arg
    if s.kind == "scalar":
        return num(s.data)
    if s.kind not in SPEC_KINDS:
        raise FusionFileError(f"cannot write input spec of kind {s.kind!r}")
    dtype = _torch_dtype_src(s.fill_dtype or s.dtype or torch.float32)
    size = s.storage_shape() if s.strides is not None else s.shape
    if s.kind in ("randn", "rand") and s.strides is not None and len(size) == 1:
        size_src = str(size[0])  # nvFuser's `torch.randn(16777216, ...).as_strided(...)`
    else:
        size_src = _tuple_src(size)
    extra = ""
    if s.kind == "make_tensor":
        head = f"torch.testing.make_tensor({size_src}"
        if s.low is not None:
            extra += f", low={s.low!r}"
        if s.high is not None:
            extra += f", high={s.high!r}"
    elif s.kind == "randint":
        head = f"torch.randint({s.low!r}, {s.high!r}, {size_src}"
    elif s.kind == "full":
        head = f"torch.full({size_src}, {num(s.fill_value)}"
    elif s.kind == "tensor":
        head = f"torch.tensor({num(s.data)}"
    elif s.kind == "arange":
        head = f"torch.arange({num(s.low)}, {num(s.high)}, {num(s.fill_value)}"
    else:
        head = f"torch.{s.kind}({size_src}"
    # A file that named no device keeps naming none (its specs then read back equal).
    device = f", device={s.device!r}" if s.device is not None else ""
    text = f"{head}, dtype={dtype}{device}{extra})"
    if s.scale is not None or s.shift is not None or s.compare is not None:
        if s.scale is not None:
            text += f" * {num(s.scale)}"
        if s.shift is not None:
            text += f" + {num(s.shift)}"
        if s.compare is not None:
            text += f" {COMPARISONS[s.compare[0]]} {num(s.compare[1])}"
        text = f"({text})"
    if s.fill_dtype is not None and s.dtype is not None:
        # The dtype the written arithmetic or comparison gives; a later dtype change after it.
        if s.compare is not None:
            natural = torch.bool
        elif s.scale is not None or s.shift is not None:
            natural = _arith_dtype(s)
        else:
            natural = s.fill_dtype
        if s.dtype != natural:
            text += f".to({_torch_dtype_src(s.dtype)})"
    if s.strides is not None:
        offset = f", {s.offset}" if s.offset else ""
        text += f".as_strided({_tuple_src(s.shape)}, {_tuple_src(s.strides)}{offset})"
    if s.view_dtype is not None:
        text += f".view({_torch_dtype_src(s.view_dtype)})"
    return text


def _arith_dtype(s: InputSpec) -> torch.dtype:
    """The dtype torch gives `x * scale + shift` for x of the spec's fill dtype."""
    t = torch.empty(1, dtype=s.fill_dtype, device="meta")
    if s.scale is not None:
        t = t * s.scale
    if s.shift is not None:
        t = t + s.shift
    return t.dtype
