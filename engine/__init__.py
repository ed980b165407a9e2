"""engine: an nvFuser-style fusion compiler. The public API (DESIGN.md section 5)."""

from engine import multidevice
from engine.compile import CompiledFusion, compile_fusion
from engine.dtypes import DataType
from engine.errors import (
    CompileError,
    EngineError,
    ExecutionError,
    FusionDefinitionError,
    FusionFileError,
    ScheduleError,
)
from engine.frontend.definition import FusionDefinition
from engine.frontend.pyformat import dumps_fusion, load_fusion, loads_fusion, save_fusion
from engine.ir.iterdomain import ParallelType
from engine.ir.tensorview import MemoryType

__all__ = [
    "CompileError", "CompiledFusion", "DataType", "EngineError", "ExecutionError", "FusionDefinition",
    "FusionDefinitionError", "FusionFileError", "MemoryType", "ParallelType", "ScheduleError",
    "compile_fusion", "dumps_fusion", "load_fusion", "loads_fusion", "multidevice", "save_fusion",
]
