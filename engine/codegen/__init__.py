"""CUDA code generation: kernel IR to CUDA C, with runtime headers inlined.

Importing the package installs the spelling of the kernel IR's typed ops (spelling.py).
"""

from engine.codegen import spelling as _spelling  # noqa: F401
