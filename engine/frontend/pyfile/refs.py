"""What a top-level name of a fusion file stands for while it is read."""

from __future__ import annotations

from typing import Any


class Ref:
    """What a top-level name stands for while reading (never a live object from the file).

    kind: "module" (value: "torch", "torch.testing", "nvfuser" or "math"), "torch_fn" (an
    input maker), "math_fn", "fd_class", "fusion_class", "fusion", "enum", "function",
    "class", "fd", "inputs", "spec", "outputs", "const" (a number, size, dtype or device named
    at the top level), or "opaque": a name the loader gives no meaning (from another
    module's import, a skipped statement, a test function's parameter), value saying why.
    """

    def __init__(self, kind: str, value: Any = None) -> None:
        self.kind = kind
        self.value = value
