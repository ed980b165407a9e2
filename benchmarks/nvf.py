"""nvFuser beside the engine: import nvfuser_direct (with the c10 stub of shared/peers/README.md)
and rebuild one of our FusionDefinitions with its python frontend, call by call.

Our FusionDefinition records every frontend call (`fd.recorded_calls`: define_tensor,
define_scalar, fd.ops.*, add_output, with their arguments and results) under nvFuser's
own names, so replaying them on nvfuser_direct's FusionDefinition mirrors the definition
exactly; only a few keyword names differ between the two frontends (KWARG_RENAMES).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

# Our keyword -> nvfuser_direct's, per op.
KWARG_RENAMES: dict[str, dict[str, str]] = {
    "nv_block_quantize": {"swizzle_scales": "swizzle_block_scales"},
}


def import_nvfuser() -> tuple[Any, str]:
    """(module, description) or (None, why not). FUSESCOPE_NVF_SHIM names the stub library
    (gcc -shared of symcheck.py's C file) to load RTLD_GLOBAL before the import."""
    shim = os.environ.get("FUSESCOPE_NVF_SHIM")
    try:
        if shim:
            ctypes.CDLL(shim, mode=os.RTLD_GLOBAL)
        import nvfuser_direct as nvf
    except Exception as e:  # ImportError, OSError (undefined symbol), ...
        first = str(e).splitlines()[0][:300] if str(e) else ""
        return None, f"nvfuser_direct does not import ({type(e).__name__}: {first})"
    version = getattr(nvf, "__version__", None)
    if version is None:
        try:
            from nvfuser_direct.version import version as v  # type: ignore[import-not-found]

            version = v() if callable(v) else v
        except Exception:
            version = "?"
    return nvf, f"nvfuser_direct {version}" + (" (c10 stub loaded)" if shim else "")


def mirror(fd: Any, nvf: Any) -> Any:
    """An nvfuser_direct FusionDefinition replaying `fd`'s recorded frontend calls."""
    from engine.dtypes import DataType
    from engine.ir.base import Val

    mapped: dict[int, Any] = {}

    def conv(v: Any) -> Any:
        if isinstance(v, DataType):
            return getattr(nvf.DataType, v.name)
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, Val):
            if id(v) not in mapped:
                raise ValueError(f"{getattr(v, 'short_name', v)} is used before any replayed call made it")
            return mapped[id(v)]
        return v

    nfd = nvf.FusionDefinition()
    with nfd:
        for call in fd.recorded_calls:
            if call.target == "fd":
                fn = getattr(nfd, call.name)
            elif call.target == "ops":
                fn = getattr(nfd.ops, call.name)
            else:
                raise NotImplementedError(f"fd.sched.{call.name}: user schedules are not mirrored")
            renames = KWARG_RENAMES.get(call.name, {})
            kwargs = {renames.get(k, k): conv(x) for k, x in call.kwargs.items()}
            result = fn(*conv(call.args), **kwargs)
            if isinstance(call.result, (tuple, list)):
                for ours, theirs in zip(call.result, result):
                    mapped[id(ours)] = theirs
            elif call.result is not None:
                mapped[id(call.result)] = result
    return nfd
