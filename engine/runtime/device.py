"""Device properties that heuristics depend on.

Read from the GPU when there is one; otherwise a named model (the H200 by default, the GPU
the project measures on)
that the user can switch, so heuristics and their explanations are reproducible
on a machine without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    shared_memory_per_block: int  # opt-in maximum, bytes
    shared_memory_per_sm: int  # bytes
    l2_cache_bytes: int
    memory_bandwidth_gbps: float  # peak DRAM bandwidth, GB/s
    measured: bool = False  # True when read from a real device
    # Peak FP32 throughput without tensor cores (FMA = 2 FLOPs), GFLOP/s: the compute ceiling of a
    # roofline. A real device takes it from the model of its generation, as the bandwidth.
    peak_fp32_gflops: float = 0.0
    # Loaded DRAM latency, ns (a model value, not measured): with the bandwidth it gives the
    # bytes the chip must keep in flight (Little's law) that the heuristics report.
    memory_latency_ns: float = 600.0

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"


_KIB = 1024
_MIB = 1024 * 1024

MODELS: dict[str, DeviceProperties] = {
    "H100": DeviceProperties(
        name="NVIDIA H100 80GB HBM3 (model)", compute_capability=(9, 0), sm_count=132,
        warp_size=32, max_threads_per_block=1024, max_threads_per_sm=2048,
        registers_per_sm=65536, max_registers_per_thread=255,
        shared_memory_per_block=227 * _KIB, shared_memory_per_sm=228 * _KIB,
        l2_cache_bytes=50 * _MIB, memory_bandwidth_gbps=3352.0, peak_fp32_gflops=66900.0,
    ),
    "H200": DeviceProperties(
        name="NVIDIA H200 (model)", compute_capability=(9, 0), sm_count=132,
        warp_size=32, max_threads_per_block=1024, max_threads_per_sm=2048,
        registers_per_sm=65536, max_registers_per_thread=255,
        shared_memory_per_block=227 * _KIB, shared_memory_per_sm=228 * _KIB,
        l2_cache_bytes=50 * _MIB, memory_bandwidth_gbps=4800.0, peak_fp32_gflops=66900.0,
    ),
    "A100": DeviceProperties(
        name="NVIDIA A100-SXM4-80GB (model)", compute_capability=(8, 0), sm_count=108,
        warp_size=32, max_threads_per_block=1024, max_threads_per_sm=2048,
        registers_per_sm=65536, max_registers_per_thread=255,
        shared_memory_per_block=163 * _KIB, shared_memory_per_sm=164 * _KIB,
        l2_cache_bytes=40 * _MIB, memory_bandwidth_gbps=2039.0, peak_fp32_gflops=19500.0,
        memory_latency_ns=550.0,
    ),
}

DEFAULT_MODEL = "H200"


def model(name: str = DEFAULT_MODEL) -> DeviceProperties:
    try:
        return MODELS[name.upper()]
    except KeyError:
        raise ValueError(f"unknown device model {name!r}; choose one of {', '.join(MODELS)}") from None


def query(index: int = 0) -> DeviceProperties | None:
    """Properties of CUDA device `index`, or None when there is no GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    p = torch.cuda.get_device_properties(index)
    base = _closest_model(p.major, p.minor)
    return replace(
        base,
        name=p.name,
        compute_capability=(p.major, p.minor),
        sm_count=p.multi_processor_count,
        warp_size=getattr(p, "warp_size", 32),
        max_threads_per_sm=getattr(p, "max_threads_per_multi_processor", base.max_threads_per_sm),
        registers_per_sm=getattr(p, "regs_per_multiprocessor", base.registers_per_sm),
        shared_memory_per_block=getattr(p, "shared_memory_per_block_optin", base.shared_memory_per_block),
        shared_memory_per_sm=getattr(p, "shared_memory_per_multiprocessor", base.shared_memory_per_sm),
        l2_cache_bytes=getattr(p, "L2_cache_size", base.l2_cache_bytes),
        measured=True,
    )


def _closest_model(major: int, minor: int) -> DeviceProperties:
    # Bandwidth is not reported by torch (engine.runtime.cuda measures it from the memory
    # clock); the rest comes from the model of the same generation.
    return MODELS["A100"] if major < 9 else MODELS["H200"]


def current(prefer: str | None = None) -> DeviceProperties:
    """The real device when there is one (unless a model is asked for), else the model."""
    if prefer is not None:
        return model(prefer)
    return query() or model()
