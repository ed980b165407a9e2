# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the head of nvFuser's older tests/python/test_python_frontend.py, whose imports
# (itertools, math, os, functools.partial, typing, pytest, numpy) come along when a test is
# pasted into an issue: none of them is imported; math is read, so `math.sqrt(2 / math.pi)`
# in the fusion and `math.prod` in the sizes are numbers. A GELU (tanh) on a 3-D input.
import itertools
import math
import os
from functools import partial
from typing import List

import numpy as np
import pytest
import torch
from nvfuser import FusionDefinition, DataType

shape = [2, 3, 16]
numel = math.prod(shape)


def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(math.sqrt(2.0 / math.pi), dtype=DataType.Double)
    S2 = fd.define_scalar(0.044715, dtype=DataType.Double)
    T3 = fd.ops.mul(T0, fd.ops.mul(T0, T0))
    T4 = fd.ops.mul(S1, fd.ops.add(T0, fd.ops.mul(S2, T3)))
    T5 = fd.ops.add(fd.define_scalar(1.0, dtype=DataType.Double), fd.ops.tanh(T4))
    T6 = fd.ops.mul(fd.ops.mul(fd.define_scalar(0.5, dtype=DataType.Double), T0), T5)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [torch.randn(numel, device="cuda").view(shape)]
out = fd.execute(inputs)
np.testing.assert_allclose(out[0].cpu().numpy(), torch.nn.functional.gelu(inputs[0], approximate="tanh").cpu().numpy(),
                           rtol=1e-5, atol=1e-5)
