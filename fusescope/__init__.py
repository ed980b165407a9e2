"""fusescope: an interactive terminal debugger for the engine's fusions.

Importing this package is cheap on purpose: Textual is imported only when the TUI starts,
and the engine only through the adapters whose names `fusescope.model` gathers.
"""

__version__ = "0.1.0"
