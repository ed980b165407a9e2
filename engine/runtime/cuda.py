"""The cuda back end: a compiled kernel launched on torch tensors through the CUDA driver (cupy).

Arguments are the ABI's packed bytes (engine.runtime.abi.pack_args): one host
buffer per kernel parameter, an array of their addresses (the `void**` that
cuLaunchKernel takes), and the driver copies them at launch. torch and cupy
share the device's primary context, so torch's data pointers are valid in
modules that cupy loads, and kernels run on torch's current stream unless a
stream is given.

cupy is imported inside functions only: `import engine` must work without it.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from dataclasses import dataclass, replace

import torch

from engine.errors import CompileError, ExecutionError
from engine.runtime import device as device_mod
from engine.runtime.abi import ArgBuffer, ArgSpec, LaunchConfig, ScalarArg, TensorArg, pack_args
from engine.runtime.nvrtc import DEFAULT_OPTIONS, CompiledBinary, compile_cuda, device_arch

# CUfunction_attribute values (cuda.h); cupy's driver wrapper takes the raw ints.
_ATTR_MAX_THREADS_PER_BLOCK = 0
_ATTR_SHARED_SIZE_BYTES = 1
_ATTR_CONST_SIZE_BYTES = 2
_ATTR_LOCAL_SIZE_BYTES = 3
_ATTR_NUM_REGS = 4
_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

# cudaDeviceAttr values (driver_types.h) for the peak DRAM bandwidth, which torch does not report.
_DEV_ATTR_MEMORY_CLOCK_RATE = 36  # kHz
_DEV_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37  # bits

# Above this much dynamic shared memory a kernel must opt in (cuFuncSetAttribute).
_DEFAULT_DYNAMIC_SMEM_LIMIT = 48 * 1024

_STICKY = ("a fault like this is sticky: it may have poisoned the CUDA context, so later CUDA "
           "calls in this process can fail too; restart the process")


@dataclass(frozen=True)
class KernelAttributes:
    """What the compiled function needs per thread and per block (cuFuncGetAttribute)."""

    registers: int  # per thread
    static_shared_bytes: int  # per block, __shared__ declarations
    local_bytes: int  # per thread: spills and local arrays
    const_bytes: int
    max_threads_per_block: int  # the most this function can launch with, given its registers


@dataclass(frozen=True)
class Occupancy:
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int

    @property
    def fraction(self) -> float:
        """Active warps over the SM's maximum (0..1)."""
        return self.active_warps_per_sm / self.max_warps_per_sm if self.max_warps_per_sm else 0.0


@functools.cache
def read_device_properties(index: int = 0) -> device_mod.DeviceProperties:
    """The real device's properties: device.query() (torch) plus the peak DRAM bandwidth.

    torch does not report bandwidth and device.query() takes it from the closest
    model (an H200 would get the H100's 3.35 TB/s), so read the memory clock and
    bus width from the driver: peak = 2 (double data rate) x clock x bus bytes.
    """
    props = device_mod.query(index)
    if props is None:
        raise ExecutionError("no CUDA device is available")
    try:
        import cupy

        clock_khz = cupy.cuda.runtime.deviceGetAttribute(_DEV_ATTR_MEMORY_CLOCK_RATE, index)
        bus_bits = cupy.cuda.runtime.deviceGetAttribute(_DEV_ATTR_GLOBAL_MEMORY_BUS_WIDTH, index)
    except Exception:  # attribute missing on this driver: keep the model's figure
        return props
    if clock_khz > 0 and bus_bits > 0:
        props = replace(props, memory_bandwidth_gbps=2.0 * clock_khz * 1e3 * (bus_bits / 8) / 1e9)
    return props


def validate_args(kernel: str, specs: list[ArgSpec], args: list[object], device: torch.device) -> None:
    """Check count, kinds and device of launch arguments; messages name the kernel and argument."""
    if len(args) != len(specs):
        names = ", ".join(s.name for s in specs)
        raise ExecutionError(f"kernel {kernel} takes {len(specs)} arguments ({names}), got {len(args)}")
    for spec, value in zip(specs, args):
        if isinstance(spec, TensorArg):
            if not isinstance(value, torch.Tensor):
                raise ExecutionError(
                    f"kernel {kernel}: argument {spec.name} ({spec.decl}) must be a tensor, "
                    f"got {type(value).__name__}")
            if value.device != device:
                raise ExecutionError(
                    f"kernel {kernel}: argument {spec.name} is on {value.device}, the kernel runs on {device}")
        elif isinstance(spec, ScalarArg):
            if isinstance(value, torch.Tensor) or not isinstance(value, (bool, int, float)):
                raise ExecutionError(
                    f"kernel {kernel}: argument {spec.name} ({spec.ctype}) must be a Python scalar, "
                    f"got {type(value).__name__}")


class CudaKernel:
    """One `extern "C" __global__` function of a complete CUDA source, compiled for one device."""

    backend = "cuda"

    def __init__(self, source: str, name: str, specs: list[ArgSpec], *, device: int | None = None,
                 options: tuple[str, ...] = DEFAULT_OPTIONS, use_cache: bool = True) -> None:
        import cupy

        self.source = source
        self.name = name
        self.specs = list(specs)
        index = torch.cuda.current_device() if device is None else device
        self.device = torch.device("cuda", index)
        self.binary: CompiledBinary = compile_cuda(
            source, program=f"{name}.cu", arch=device_arch(index), options=options, use_cache=use_cache)
        with cupy.cuda.Device(index):
            try:
                self._module, self._function = self._load(self.binary.cubin)
            except CompileError:
                raise
            except Exception:
                if not self.binary.cached:
                    raise
                # A damaged or foreign cache file: compile afresh and overwrite it.
                self.binary = compile_cuda(source, program=f"{name}.cu", arch=self.binary.arch,
                                           options=options, refresh=True)
                self._module, self._function = self._load(self.binary.cubin)
        self.attributes = self._read_attributes()
        # Without the opt-in, static and dynamic shared memory together may take 48 KiB.
        self._dynamic_smem_limit = _DEFAULT_DYNAMIC_SMEM_LIMIT - self.attributes.static_shared_bytes

    @property
    def compile_time_s(self) -> float:
        return self.binary.compile_time_s

    @property
    def cached(self) -> bool:
        return self.binary.cached

    def _load(self, cubin: bytes):  # type: ignore[no-untyped-def]
        from cupy.cuda import function

        module = function.Module()
        module.load(cubin)
        try:
            fn = module.get_function(self.name)
        except Exception as exc:  # CUDA_ERROR_NOT_FOUND
            raise CompileError(
                f"kernel {self.name} is not in the compiled module (is it declared "
                f'extern "C" __global__?): {exc}') from None
        # Keep the module: unloading it would invalidate the function.
        return module, fn

    def _attr(self, attribute: int) -> int:
        from cupy.cuda import driver

        return int(driver.funcGetAttribute(attribute, self._function.ptr))

    def _read_attributes(self) -> KernelAttributes:
        return KernelAttributes(
            registers=self._attr(_ATTR_NUM_REGS),
            static_shared_bytes=self._attr(_ATTR_SHARED_SIZE_BYTES),
            local_bytes=self._attr(_ATTR_LOCAL_SIZE_BYTES),
            const_bytes=self._attr(_ATTR_CONST_SIZE_BYTES),
            max_threads_per_block=self._attr(_ATTR_MAX_THREADS_PER_BLOCK),
        )

    def _allow_dynamic_smem(self, nbytes: int) -> None:
        """Opt in to more than 48 KiB of dynamic shared memory when a launch asks for it."""
        if nbytes <= self._dynamic_smem_limit:
            return
        from cupy.cuda import driver

        try:
            driver.funcSetAttribute(self._function.ptr, _ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        except Exception as exc:
            props = read_device_properties(self.device.index)
            raise ExecutionError(
                f"kernel {self.name}: cannot use {nbytes} bytes of dynamic shared memory "
                f"(+{self.attributes.static_shared_bytes} static; the device allows "
                f"{props.shared_memory_per_block} per block): {exc}") from None
        self._dynamic_smem_limit = nbytes

    def occupancy(self, launch: LaunchConfig) -> Occupancy:
        """Active blocks and warps per SM for this launch's block size and dynamic shared memory."""
        import cupy
        from cupy.cuda import driver

        props = read_device_properties(self.device.index)
        with cupy.cuda.Device(self.device.index):
            self._allow_dynamic_smem(launch.shared_mem_bytes)
            blocks = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(
                self._function.ptr, launch.threads, launch.shared_mem_bytes))
        warps_per_block = -(-launch.threads // props.warp_size)
        return Occupancy(blocks, blocks * warps_per_block, props.max_threads_per_sm // props.warp_size)

    def _check_block(self, launch: LaunchConfig) -> None:
        if launch.threads > self.attributes.max_threads_per_block:
            raise ExecutionError(
                f"kernel {self.name}: {launch.threads} threads per block, but with "
                f"{self.attributes.registers} registers per thread it can launch at most "
                f"{self.attributes.max_threads_per_block}")

    def launcher(self, launch: LaunchConfig, layouts: list[tuple[list[int], list[int]] | None], *,
                 sync: bool = False) -> CudaLauncher:
        """A launcher for repeated launches whose tensors keep these sizes and strides."""
        import cupy

        self._check_block(launch)
        with cupy.cuda.Device(self.device.index):
            self._allow_dynamic_smem(launch.shared_mem_bytes)
        try:
            args = ArgBuffer(self.specs, layouts)
        except (KeyError, ValueError) as exc:
            raise ExecutionError(f"kernel {self.name}: {exc}") from None
        return CudaLauncher(self, launch, args, sync)

    def launch(self, args: list[torch.Tensor | float | int | bool], launch: LaunchConfig,
               alloc_strides: dict[str, list[int]] | None = None, stream: int | None = None,
               *, sync: bool = True) -> None:
        """Launch on `stream` (torch's current stream by default).

        sync=True waits for the kernel so that a fault is reported here, naming this
        kernel; the profiler passes sync=False to time back-to-back launches.
        """
        import cupy

        validate_args(self.name, self.specs, list(args), self.device)
        self._check_block(launch)
        try:
            packed = pack_args(self.specs, list(args), alloc_strides)
        except (TypeError, ValueError, KeyError) as exc:
            raise ExecutionError(f"kernel {self.name}: {exc}") from None

        # One exactly sized host buffer per parameter, and the void** array of their
        # addresses; both stay referenced until launchKernel returns (the driver copies them).
        buffers = [(ctypes.c_char * len(b)).from_buffer_copy(b) for b in packed]
        params = (ctypes.c_void_p * max(1, len(buffers)))(*[ctypes.addressof(b) for b in buffers])
        if stream is None:
            stream = current_stream(self.device.index)
        grid, block = launch.grid, launch.block

        with cupy.cuda.Device(self.device.index):
            self._allow_dynamic_smem(launch.shared_mem_bytes)
            try:
                launch_on_stream(self._function.ptr, (*grid, *block, launch.shared_mem_bytes), stream,
                                 ctypes.addressof(params) if buffers else 0, launch.cooperative)
            except Exception as exc:
                raise ExecutionError(f"kernel {self.name} failed to launch ({launch}): {exc}") from None
            if sync:
                synchronize(stream, self.name)

    def __repr__(self) -> str:
        return f"CudaKernel({self.name}, {self.binary.arch}, cached={self.binary.cached})"


class CudaLauncher:
    """Launches one kernel again and again with arguments of fixed sizes and strides.

    Everything but the data pointers and scalars is settled once (argument layout, dynamic
    shared memory opt-in, block size check), so a launch is: write the pointers, read
    torch's current stream, cuLaunchKernel. Nothing waits unless `sync`.
    """

    def __init__(self, kernel: CudaKernel, launch: LaunchConfig, args: ArgBuffer, sync: bool) -> None:
        self.kernel = kernel
        self.args = args
        self.sync = sync
        self._fn = kernel._function.ptr
        self._index = kernel.device.index
        g, b = launch.grid, launch.block
        self._dims = (g[0], g[1], g[2], b[0], b[1], b[2], launch.shared_mem_bytes)
        self._launch = launch
        self._cooperative = launch.cooperative
        self._lock = threading.Lock()
        from cupy.cuda import driver

        self._plain_launch = driver.launchKernel

    def __call__(self, values: list[object]) -> None:
        stream = current_stream(self._index)
        with self._lock:  # one argument buffer: threads sharing the launcher take turns
            self.args.fill(values)
            try:
                if self._cooperative:
                    launch_on_stream(self._fn, self._dims, stream, self.args.address, True)
                else:
                    self._plain_launch(self._fn, *self._dims, stream, self.args.address, 0)
            except Exception:
                self._launch_on_own_device(stream)
        if self.sync:
            synchronize(stream, self.kernel.name)

    def _launch_on_own_device(self, stream: int) -> None:
        """The launch failed: perhaps another device is current (the function belongs to its
        device's context). Try once more with the kernel's device current."""
        import cupy

        with cupy.cuda.Device(self._index):
            try:
                launch_on_stream(self._fn, self._dims, stream, self.args.address, self._launch.cooperative)
            except Exception as exc:
                raise ExecutionError(f"kernel {self.kernel.name} failed to launch ({self._launch}): {exc}") from None


def launch_on_stream(fn: int, dims: tuple[int, ...], stream: int, params: int, cooperative: bool) -> None:
    """cuLaunchKernel, or cuLaunchCooperativeKernel for a kernel whose blocks wait for each other
    (the driver then refuses a grid that cannot be resident at once instead of letting it hang)."""
    from cupy.cuda import driver

    if cooperative:
        driver.launchCooperativeKernel(fn, *dims, stream, params)
    else:
        driver.launchKernel(fn, *dims, stream, params, 0)


def current_stream(index: int) -> int:
    """torch's current stream on device `index`, as the raw handle the driver takes."""
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


# The raw handle without building a torch Stream object (what inductor's generated code calls).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def synchronize(stream: int, kernel: str) -> None:
    """Wait for `stream`; a fault there becomes an ExecutionError naming `kernel`."""
    import cupy

    try:
        cupy.cuda.runtime.streamSynchronize(stream)
    except Exception as exc:
        raise ExecutionError(f"kernel {kernel} failed while running: {exc}; {_STICKY}") from None
