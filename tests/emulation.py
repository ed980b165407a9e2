"""The one place tests learn whether the g++ emulator can run generated kernels."""

import shutil

import pytest

HAS_GXX = shutil.which("g++") is not None
REASON = "g++ is needed to emulate kernels"

needs_gxx = pytest.mark.skipif(not HAS_GXX, reason=REASON)


def require_gxx() -> None:
    """Skip the calling test from here on when g++ is missing (its checks before this ran)."""
    if not HAS_GXX:
        pytest.skip(REASON)
