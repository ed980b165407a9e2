"""The kernel ABI shared by code generation and every back end.

A generated kernel is `extern "C" __global__ void NAME(args...)`; each argument is
either a `Tensor<T, N, A>` passed by value or a scalar. A Tensor's memory layout
(see runtime/array.cuh) is: the data pointer, then N int64 logical sizes, then A
int64 allocation strides (in elements). `Tensor<T, 0, 0>` is the pointer alone.
Back ends pack arguments with `pack_args`, so the CUDA driver launch and the
emulator's ctypes call read the same bytes.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class TensorArg:
    """A `Tensor<ctype, ndims, alloc_dims>` argument."""

    name: str  # the TensorView or buffer it carries, e.g. "T0" or "work_buf0"
    ctype: str  # element type as CUDA spells it: float, __half, __bfloat, int64_t, ...
    ndims: int
    alloc_dims: int

    @property
    def decl(self) -> str:
        return f"Tensor<{self.ctype}, {self.ndims}, {self.alloc_dims}>"


@dataclass(frozen=True)
class ScalarArg:
    name: str
    ctype: str  # double, float, int64_t, int, bool

    @property
    def decl(self) -> str:
        return self.ctype


ArgSpec = TensorArg | ScalarArg


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem_bytes: int = 0
    # Every block must be resident at once (the kernel waits at a grid barrier): the cuda back
    # end launches it with cuLaunchCooperativeKernel, which refuses a grid that does not fit.
    cooperative: bool = False

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def __str__(self) -> str:
        g, b = self.grid, self.block
        return (
            f"Launch Parameters: BlockDim.x = {b[0]}, BlockDim.y = {b[1]}, BlockDim.z = {b[2]}, "
            f"GridDim.x = {g[0]}, GridDim.y = {g[1]}, GridDim.z = {g[2]}, "
            f"Smem Size = {self.shared_mem_bytes}"
        )


_SCALAR_FORMATS = {
    "double": "d", "float": "f", "int64_t": "q", "nvfuser_index_t": "q", "int": "i",
    "bool": "?",
}


def pack_tensor(data_ptr: int, sizes: list[int], strides: list[int]) -> bytes:
    return struct.pack(f"<Q{len(sizes)}q{len(strides)}q", data_ptr, *sizes, *strides)


def tensor_layout(t: torch.Tensor, spec: TensorArg, alloc_strides: list[int] | None = None
                  ) -> tuple[list[int], list[int]]:
    """Logical sizes and allocation strides (elements) of `t` for `spec`.

    alloc_strides: the strides in allocation order when the caller knows them
    (a tensor whose allocation domain permutes or splits its logical one);
    otherwise the logical strides, which is right when allocation == logical.
    """
    sizes = list(t.shape)
    strides = list(alloc_strides) if alloc_strides is not None else list(t.stride())
    if len(sizes) != spec.ndims or len(strides) != spec.alloc_dims:
        raise ValueError(
            f"{spec.name}: kernel expects {spec.ndims} sizes and {spec.alloc_dims} strides, "
            f"got {len(sizes)} and {len(strides)}"
        )
    return sizes, strides


def pack_scalar(value: float | int | bool, spec: ScalarArg) -> bytes:
    return struct.pack("<" + _SCALAR_FORMATS[spec.ctype], value)


def pack_args(specs: list[ArgSpec], values: list[object],
              alloc_strides: dict[str, list[int]] | None = None) -> list[bytes]:
    """One byte string per argument; tensors must already be on the target device."""
    if len(specs) != len(values):
        raise ValueError(f"kernel takes {len(specs)} arguments, got {len(values)}")
    out: list[bytes] = []
    for spec, value in zip(specs, values):
        if isinstance(spec, TensorArg):
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"{spec.name}: expected a tensor, got {type(value).__name__}")
            sizes, strides = tensor_layout(value, spec, (alloc_strides or {}).get(spec.name))
            out.append(pack_tensor(value.data_ptr(), sizes, strides))
        else:
            out.append(pack_scalar(value, spec))
    return out


def _align8(n: int) -> int:
    return (n + 7) & ~7


class ArgBuffer:
    """A kernel's packed arguments in one host buffer that lives as long as the launcher.

    Sizes and strides are fixed by the compiled input signature, so they are written once;
    a launch only writes the data pointers and scalars (`fill`). `address` is the `void**`
    that cuLaunchKernel (and the emulator's shim) reads; the driver copies the arguments at
    launch, so the buffer can be refilled right after. Every argument starts on 8 bytes.
    """

    def __init__(self, specs: list[ArgSpec], layouts: list[tuple[list[int], list[int]] | None]) -> None:
        if len(specs) != len(layouts):
            raise ValueError(f"kernel takes {len(specs)} arguments, got {len(layouts)} layouts")
        offsets, lengths, size = [], [], 0
        for spec, layout in zip(specs, layouts):
            if isinstance(spec, TensorArg):
                sizes, strides = layout or ([], [])
                if len(sizes) != spec.ndims or len(strides) != spec.alloc_dims:
                    raise ValueError(f"{spec.name}: kernel expects {spec.ndims} sizes and {spec.alloc_dims} "
                                     f"strides, got {len(sizes)} and {len(strides)}")
                n = 8 * (1 + len(sizes) + len(strides))
            else:
                n = struct.calcsize("<" + _SCALAR_FORMATS[spec.ctype])
            offsets.append(size)
            lengths.append(n)
            size += _align8(n)
        self._spans = list(zip(offsets, lengths))
        # 64-bit words: 8-byte aligned, and a data pointer is one item assignment.
        self._words = (ctypes.c_uint64 * max(1, size // 8))()
        self._buf = memoryview(self._words).cast("B")
        for spec, layout, off in zip(specs, layouts, offsets):
            if isinstance(spec, TensorArg):
                sizes, strides = layout or ([], [])
                struct.pack_into(f"<{len(sizes) + len(strides)}q", self._buf, off + 8, *sizes, *strides)
        base = ctypes.addressof(self._words)
        self._params = (ctypes.c_void_p * max(1, len(specs)))(*[base + off for off in offsets])
        self.address = ctypes.addressof(self._params)
        # (word index of a data pointer, or -1 with the scalar's struct format and offset)
        self._slots = [(off // 8, "", off) if isinstance(s, TensorArg) else (-1, "<" + _SCALAR_FORMATS[s.ctype], off)
                       for s, off in zip(specs, offsets)]

    def fill(self, values: list[Any]) -> None:
        """Write this launch's data pointers (tensors) and scalars, in parameter order."""
        words, buf = self._words, self._buf
        for (word, fmt, off), v in zip(self._slots, values):
            if word >= 0:
                words[word] = v.data_ptr()
            else:
                struct.pack_into(fmt, buf, off, v)

    def packed(self) -> list[bytes]:
        """The bytes of each argument as they stand (what pack_args gives for the same values)."""
        raw = bytes(self._buf)
        return [raw[off:off + n] for off, n in self._spans]
