"""Fusion files: nvFuser's python-frontend repro format, read with `ast` and written back.

`pyread` interprets a file call by call without executing it; `pywrite` writes a
FusionDefinition back from its recorded frontend calls; `input_spec` describes the
file's `inputs = [...]` list.
"""

from engine.frontend.input_spec import InputSpec
from engine.frontend.pyread import load_fusion, loads_fusion
from engine.frontend.pywrite import dumps_fusion, save_fusion

__all__ = ["InputSpec", "dumps_fusion", "load_fusion", "loads_fusion", "save_fusion"]
