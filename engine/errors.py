"""Typed errors. Each names the tensor, op, file or line at fault in its message."""


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class FusionDefinitionError(EngineError):
    """An op was given operands it cannot take (rank, shape, dtype, dims)."""


class FusionFileError(EngineError):
    """A saved fusion file is malformed or asks for something not allowed."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)
        self.message = message  # without the path and line
        self.path = path
        self.line = line


class ScheduleError(EngineError):
    """A schedule transform is illegal for the tensor it was applied to."""


class RegisterFitError(ScheduleError):
    """No block shape of a persistent schedule keeps its per-thread arrays in registers: the
    same holds for any group holding the same reductions."""


class NoSchedulerError(ScheduleError):
    """The segmenter left a segment that no scheduler accepts; `exprs` names its ops (empty
    when unknown)."""

    def __init__(self, message: str, exprs: frozenset[int] = frozenset()) -> None:
        super().__init__(message)
        self.exprs = exprs


class CompileError(EngineError):
    """Generated code failed to compile. `tensor`: the short name of the tensor at fault,
    where the failure is one tensor's (the segmenter may then keep that tensor's op apart)."""

    def __init__(self, *args: object, tensor: str | None = None) -> None:
        super().__init__(*args)
        self.tensor = tensor


class UnpartitionedWriteError(CompileError):
    """In a kernel launched with more than one thread, a tensor written to global memory whose
    loop nest binds no thread or block index: every thread would write all of it. A
    scheduler's bug (its parallel types did not reach the tensor), so the fusion is not
    segmented around it (compile_stages re-raises it)."""


class ExecutionError(EngineError):
    """A kernel or evaluator failed while running."""
