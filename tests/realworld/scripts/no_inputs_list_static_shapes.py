# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on fusion definitions pasted into NVIDIA/Fuser issues without their inputs (the
# python definition from NVFUSER_DUMP=python_definition, or the one a C++ test's comment
# shows): no inputs list and no run. Every size is static here, so the example inputs are
# made from the definition: T0 transposed in memory (stride_order), T1 an expanded
# broadcast (contiguity None on a size-8 axis, stride 0), T2 not contiguous (padded rows).
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[6, 8], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    T1 = fd.define_tensor(shape=[6, 8], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[6, 8], contiguity=[False, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cast(T2, dtype=DataType.Float)
    T4 = fd.ops.mul(T0, T1)
    T5 = fd.ops.add(T4, T3)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T5)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)
