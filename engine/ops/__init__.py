"""Op builders with shape and dtype inference; `fd.ops` exposes them by nvFuser's names.

Each module lists its public builders in `__all__`; this package gathers them.
"""

from engine.ops import arith, factory, indexing, matmul, quantize, reduction, shape

_MODULES = [arith, reduction, shape, factory, indexing, matmul, quantize]

__all__: list[str] = []
for _m in _MODULES:
    for _name in _m.__all__:
        globals()[_name] = getattr(_m, _name)
        __all__.append(_name)
del _m, _name
