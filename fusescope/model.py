"""The debugger's model of a fusion, in one namespace: what the TUI and the CLI import. Widgets
and the CLI see plain data (strings, dataclasses), never engine objects, so the UI can't reach
into the IR and the engine can change behind the adapters.

The names are defined by the modules that do the work:
- fusescope/session.py: loading a fusion file or a bundle's text, the Session and its views;
- fusescope/compile_options.py: the options a user can change, and the parsers of their text;
- fusescope/compile_result.py: a compilation as plain data, and its reports;
- fusescope/compiler.py: compiling through the engine and flattening the result;
- fusescope/run_result.py: a run as plain data, its report and its JSON form;
- fusescope/run_job.py: the run itself, in the worker process, and the handle to that worker;
- fusescope/reference_check.py: an output against the reference, within the test tolerance;
- fusescope/text_format.py: byte counts, times and one-line messages.
session.py, compiler.py and run_job.py are the modules that import the engine.
"""

from __future__ import annotations

from fusescope.compile_options import (
    DEVICE_MODELS,
    CompileOptions,
    OptionError,
    parse_heuristic,
    parse_size,
    read_kernel_source,
)
from fusescope.compile_result import (
    CompileResult,
    DecisionInfo,
    EdgeInfo,
    EventInfo,
    SegmentInfo,
    VerdictInfo,
    compare_compiles,
    failed_compile,
)
from fusescope.compiler import DECISION_KINDS, SEGMENTER_KINDS, scheduler_names
from fusescope.reference_check import check_output as _check
from fusescope.run_job import RUNNING_MARK, execute_job, shutdown_worker, worker
from fusescope.run_result import (
    BACKENDS,
    OutputCheck,
    RunJob,
    RunResult,
    RunStatus,
    SegmentRun,
    TimelineRow,
    run_from_dict,
)
from fusescope.session import (
    DEFAULT_RUN_TIMEOUT_S,
    ExportError,
    LoadError,
    Role,
    Session,
    TensorInfo,
    ValueInfo,
    input_specs,
    load_session,
    session_from_source,
    skipped_summary,
)
from fusescope.text_format import fmt_ms, human_bytes

__all__ = [
    "BACKENDS",
    "DECISION_KINDS",
    "DEFAULT_RUN_TIMEOUT_S",
    "DEVICE_MODELS",
    "RUNNING_MARK",
    "SEGMENTER_KINDS",
    "CompileOptions",
    "CompileResult",
    "DecisionInfo",
    "EdgeInfo",
    "EventInfo",
    "ExportError",
    "LoadError",
    "OptionError",
    "OutputCheck",
    "Role",
    "RunJob",
    "RunResult",
    "RunStatus",
    "SegmentInfo",
    "SegmentRun",
    "Session",
    "TensorInfo",
    "TimelineRow",
    "ValueInfo",
    "VerdictInfo",
    "_check",  # the tolerance check, by the name fusescope/md_rank.py and the tests import
    "compare_compiles",
    "execute_job",
    "failed_compile",
    "fmt_ms",
    "human_bytes",
    "input_specs",
    "load_session",
    "parse_heuristic",
    "parse_size",
    "read_kernel_source",
    "run_from_dict",
    "scheduler_names",
    "session_from_source",
    "shutdown_worker",
    "skipped_summary",
    "worker",
]
