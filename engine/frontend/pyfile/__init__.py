"""Reading fusion files, one job per module (engine.frontend.pyread is the public face).

Before reading: shape (the top-level statements a script is read as: main guards, test
functions, the legacy body without a with block), needs (which of them the fusion needs;
the rest are skipped unread, as unread records), syntax (the name analysis and node checks
they share), imports (what a file's imports bind).

The loader (loader.Loader, one read of one file) reads the top-level statements: toplevel
(imports, fusion functions and classes, the with block, assignments), run (the run call
and the checking code after it), inputs, makers and spec_ops (the inputs list, as
InputSpecs), values (literal values and names; pure: the math a file may compute with),
vocab (what names may mean), refs (what a top-level name stands for).

The fusion body (body.Body, one per fusion function or with block) interprets the calls
that build the fusion: fdcalls (fd.define_*, fd.ops, fd.sched, operators) and plainpy
(list methods, builtins, comprehensions).
"""
