"""Op builders with shape and dtype inference; `fd.ops` exposes them by nvFuser's names.

Each module below lists its public builders in `__all__` (`shape` lists those that
`axes`, `reshaping` and `resize` build); this package gathers them. A name
that shadows a Python builtin (`set`) is defined with a trailing underscore (`set_`).
"""

from engine.ops import (
    arith,
    compat,
    factory,
    indexing,
    matmul,
    normalization,
    quantize,
    reduction,
    rng,
    scan,
    sdpa,
    shape,
    sort,
)

_MODULES = [arith, reduction, normalization, shape, factory, rng, indexing, scan, sort, matmul, sdpa, quantize,
            compat]

__all__: list[str] = []
for _m in _MODULES:
    for _name in _m.__all__:
        globals()[_name] = getattr(_m, _name) if hasattr(_m, _name) else getattr(_m, _name + "_")
        __all__.append(_name)
del _m, _name
