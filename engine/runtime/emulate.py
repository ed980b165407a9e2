"""The `emulate` back end: run a generated CUDA kernel on the CPU.

The kernel's complete CUDA source text (runtime headers + `extern "C" __global__ void NAME(...)`)
is compiled by g++ with engine/runtime/emu/cuda_emu.h force-included, which emulates the CUDA
execution model (one fiber per thread, blocks in sequence, barriers and warp shuffles as fiber
barriers, see the header). A generated shim, `fs_launch`, unpacks the arguments from the bytes
that engine.runtime.abi.pack_args produces (the same bytes a CUDA launch reads) and runs the grid.
Shared libraries are cached on disk by a hash of everything that goes into them.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from engine.errors import CompileError, ExecutionError
from engine.runtime.abi import ArgSpec, LaunchConfig, ScalarArg, TensorArg, pack_args, pack_scalar
from engine.runtime.emu import HEADER_PATH, cache_dir, compile_error

# -fno-strict-aliasing: generated CUDA reinterprets memory freely (vectorized loads through Array
# types); nvcc tolerates that, g++ -O2 may not. -fvisibility=hidden: only fs_launch and
# fs_emu_stats are exported, so two kernels' libraries never bind to each other's symbols.
# -fstack-clash-protection: a big local array must touch the guard page below a fiber's stack
# (reported as a stack overflow) instead of silently writing into the next fiber's stack.
CXX_FLAGS: tuple[str, ...] = (
    "-O2", "-std=c++17", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing",
    "-fstack-clash-protection",
)
SHIM_FILE = "fs_emulate_shim.cpp"
_ERR_BYTES = 4096
# Per-launch CPU-time limit (seconds) when FUSESCOPE_EMU_TIMEOUT_S is unset: an endless loop in a
# kernel becomes an ExecutionError instead of a hang. Generous: emulating a large kernel is slow.
DEFAULT_TIME_LIMIT_S = 300.0
TIME_LIMIT_ENV = "FUSESCOPE_EMU_TIMEOUT_S"

# Element sizes of the CUDA element types a Tensor argument may carry (checked against the
# torch tensor, since a mismatch would read garbage silently). Unknown types are not checked.
_CTYPE_ITEMSIZE = {
    "float": 4, "double": 8, "__half": 2, "__bfloat": 2, "int64_t": 8, "int": 4, "int32_t": 4,
    "bool": 1, "__e4m3": 1, "__e5m2": 1, "__e8m0": 1, "__e2m1": 1, "int8_t": 1, "uint8_t": 1,
    "int16_t": 2, "long long": 8, "unsigned int": 4, "unsigned long long": 8, "std::complex<float>": 8, "std::complex<double>": 16,
}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class EmuStats:
    """What the emulator executed: for the profiler's 'counts only' mode."""

    launches: int = 0
    blocks: int = 0
    threads: int = 0
    barriers: int = 0  # __syncthreads completed (per block)
    warp_syncs: int = 0  # warp barriers completed (shuffles, votes, __syncwarp)
    switches: int = 0  # fiber switches

    def add(self, other: EmuStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def time_limit_s() -> float:
    """The CPU seconds one emulated launch may take: $FUSESCOPE_EMU_TIMEOUT_S (0 or less: no
    limit), else DEFAULT_TIME_LIMIT_S."""
    text = os.environ.get(TIME_LIMIT_ENV, "").strip()
    if not text:
        return DEFAULT_TIME_LIMIT_S
    try:
        return max(0.0, float(text))
    except ValueError:
        raise ExecutionError(f"{TIME_LIMIT_ENV}={text!r} is not a number of seconds") from None


def gxx_available() -> bool:
    return shutil.which("g++") is not None


def make_shim(name: str, specs: list[ArgSpec]) -> str:
    """C++ appended to the kernel source: unpack packed arguments and run the grid."""
    if not _IDENT.fullmatch(name):
        raise ValueError(f"kernel name {name!r} is not a C identifier")
    members, checks, unpack, call = [], [], [], []
    for i, spec in enumerate(specs):
        if isinstance(spec, TensorArg):
            size = 8 + 8 * (spec.ndims + spec.alloc_dims)
            checks.append(
                f'static_assert(sizeof({spec.decl}) == {size}, "{spec.decl} ({spec.name}) must be laid out '
                f'as the kernel ABI says: a pointer, {spec.ndims} int64 sizes, {spec.alloc_dims} int64 '
                f'strides");'
            )
        elif isinstance(spec, ScalarArg):
            try:
                size = len(pack_scalar(0, spec))
            except KeyError:
                raise ValueError(f"{spec.name}: unsupported scalar type {spec.ctype!r}") from None
            checks.append(f'static_assert(sizeof({spec.ctype}) == {size}, "scalar {spec.name}");')
        else:
            raise TypeError(f"argument {i}: expected a TensorArg or ScalarArg, got {spec!r}")
        members.append(f"  {spec.decl} a{i};  // {spec.name}")
        unpack.append(f"  std::memcpy(&a.a{i}, args[{i}], {size});")
        call.append(f"a->a{i}")
    lines = [
        f"// Generated by engine/runtime/emulate.py for kernel {name}.",
        "namespace {",
        "struct FsEmuArgs {",
        *members,
        "};",
        *checks,
        "void fs_emu_entry(void* p) {",
        "  FsEmuArgs* a = static_cast<FsEmuArgs*>(p);" if specs else "  (void)p;",
        f"  {name}({', '.join(call)});",
        "}",
        "}  // namespace",
        'extern "C" __attribute__((visibility("default"))) int fs_launch(void** args, int gx, int gy, '
        "int gz, int bx, int by, int bz, int smem_bytes, char* err, int errlen) {",
        "  FsEmuArgs a;" if specs else "  FsEmuArgs a; (void)args;",
        *unpack,
        "  return fs_emu::run_grid(fs_emu_entry, &a, dim3(gx, gy, gz), dim3(bx, by, bz), smem_bytes, "
        "err, errlen);",
        "}",
    ]
    return "\n".join(lines) + "\n"


_compiler_ids: dict[str, str] = {}


def _compiler_id(cxx: str) -> str:
    """Path and version of the compiler: part of the cache key."""
    if cxx not in _compiler_ids:
        r = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
        _compiler_ids[cxx] = f"{shutil.which(cxx)}\n{r.stdout.splitlines()[0] if r.stdout else ''}"
    return _compiler_ids[cxx]


def compile_library(source: str, name: str, shim: str, cxx: str = "g++",
                    flags: tuple[str, ...] = CXX_FLAGS) -> tuple[Path, bool]:
    """Compile source + shim into a shared library, or find it in the cache: (path, cached)."""
    if shutil.which(cxx) is None:
        raise CompileError(f"kernel {name}: the emulate back end needs {cxx}, which is not on PATH")
    header = HEADER_PATH.read_text(encoding="utf-8")
    # #line: g++ then names the kernel's own lines (name.cu:LINE) and the shim's (fs_emulate_shim.cpp).
    text = f'#line 1 "{name}.cu"\n{source}\n#line 1 "{SHIM_FILE}"\n{shim}'
    key = hashlib.sha256(
        "\0".join(["fs-emulate-1", _compiler_id(cxx), " ".join(flags), header, text]).encode()
    ).hexdigest()[:24]
    out_dir = cache_dir("emulate")
    lib = out_dir / f"{name[:48]}-{key}.so"
    if lib.exists():
        return lib, True
    # Kept beside the library so that a failing kernel can be rebuilt and debugged by hand.
    src_path = out_dir / f"{name[:48]}-{key}.cpp"
    src_path.write_text(text, encoding="utf-8")
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name[:32]}-", suffix=".so")
    os.close(fd)
    cmd = [cxx, *flags, "-include", str(HEADER_PATH), "-x", "c++", str(src_path), "-o", tmp]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            files = {f"{name}.cu": source, SHIM_FILE: shim, HEADER_PATH.name: header}
            raise compile_error(f"g++ could not compile kernel {name} for the emulator ({src_path})",
                                r.stderr + r.stdout, files)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return lib, False


_libs: dict[Path, ctypes.CDLL] = {}
_libs_lock = threading.Lock()
# One launch at a time in this process: a launch installs process-wide fault handlers for its
# duration (a kernel's memory fault becomes an ExecutionError), which concurrent launches from
# several threads would undo under each other.
_launch_lock = threading.Lock()


def _load(path: Path) -> ctypes.CDLL:
    with _libs_lock:
        if path not in _libs:
            lib = ctypes.CDLL(str(path))
            lib.fs_launch.argtypes = [ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_int] * 7 + [
                ctypes.c_char_p, ctypes.c_int]
            lib.fs_launch.restype = ctypes.c_int
            lib.fs_emu_stats.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int]
            lib.fs_emu_stats.restype = ctypes.c_int
            lib.fs_emu_set_time_limit.argtypes = [ctypes.c_double]
            lib.fs_emu_set_time_limit.restype = None
            _libs[path] = lib
        return _libs[path]


class EmulatedKernel:
    """One generated kernel, compiled for the CPU emulator.

    `source` is the complete CUDA text (as NVRTC would get it), `name` the `extern "C"` kernel,
    `specs` its parameters in order. Compiles (or loads from the cache) at construction;
    raises CompileError with the compiler log and the offending source lines.
    """

    def __init__(self, source: str, name: str, specs: list[ArgSpec], *,
                 extra_flags: tuple[str, ...] = ()) -> None:
        # extra_flags: e.g. ("-O0", "-g") to debug a kernel under gdb (later flags win).
        self.source = source
        self.name = name
        self.specs = list(specs)
        self.shim = make_shim(name, self.specs)
        start = time.perf_counter()
        self.library_path, self.cached = compile_library(source, name, self.shim,
                                                         flags=CXX_FLAGS + tuple(extra_flags))
        self._lib = _load(self.library_path)
        self.compile_time_s = time.perf_counter() - start  # ~0 when the library was cached
        self.stats = EmuStats()  # counts of the last launch (the profiler reads them)
        self.total_stats = EmuStats()  # summed over every launch of this object

    def _check_args(self, args: list[object]) -> None:
        if len(args) != len(self.specs):
            raise ValueError(f"kernel {self.name} takes {len(self.specs)} arguments, got {len(args)}")
        for spec, value in zip(self.specs, args):
            if isinstance(spec, TensorArg):
                if not isinstance(value, torch.Tensor):
                    raise TypeError(f"kernel {self.name}: {spec.name} must be a tensor, "
                                    f"got {type(value).__name__}")
                if value.device.type != "cpu":
                    raise ValueError(f"kernel {self.name}: {spec.name} is on {value.device}; the "
                                     "emulator runs on CPU tensors")
                size = _CTYPE_ITEMSIZE.get(spec.ctype)
                if size is not None and value.element_size() != size:
                    raise TypeError(f"kernel {self.name}: {spec.name} is {spec.ctype} ({size} bytes) "
                                    f"but the tensor is {value.dtype}")
            elif isinstance(value, torch.Tensor):
                raise TypeError(f"kernel {self.name}: scalar {spec.name} given as a tensor")

    def launch(self, args: list[torch.Tensor | float | int | bool], launch: LaunchConfig,
               alloc_strides: dict[str, list[int]] | None = None) -> None:
        """Run the kernel over `launch`'s grid on CPU tensors (written in place).

        alloc_strides: per tensor name, allocation strides when they differ from the logical
        ones (see abi.tensor_layout). Raises ExecutionError naming the kernel on a deadlock, a
        trap or failed assert, a memory fault (SIGSEGV/SIGBUS, fiber stack overflow), an integer
        division by zero, an illegal instruction, abort(), a launch past the CPU-time limit
        (time_limit_s()), or an invalid launch.
        """
        self._check_args(args)
        packed = pack_args(self.specs, list(args), alloc_strides)
        bufs = [ctypes.create_string_buffer(b, len(b)) for b in packed]
        argv = (ctypes.c_void_p * max(1, len(bufs)))(*[ctypes.addressof(b) for b in bufs])
        err = ctypes.create_string_buffer(_ERR_BYTES)
        (gx, gy, gz), (bx, by, bz) = launch.grid, launch.block
        counts = (ctypes.c_ulonglong * 5)()
        limit = time_limit_s()
        with _launch_lock:
            self._lib.fs_emu_set_time_limit(limit)
            rc = self._lib.fs_launch(argv, gx, gy, gz, bx, by, bz, launch.shared_mem_bytes, err, _ERR_BYTES)
            self._lib.fs_emu_stats(counts, 5)
        self.stats = EmuStats(1, *counts)
        self.total_stats.add(self.stats)
        if rc != 0:
            msg = err.value.decode(errors="replace")
            raise ExecutionError(f"emulated kernel {self.name} ({launch}): {msg}")

    def __repr__(self) -> str:
        return f"EmulatedKernel({self.name!r}, {len(self.specs)} args, {self.library_path.name})"
