"""Reading fusion files: nvFuser's python-frontend repro format, interpreted with `ast`.

Reading never executes the file. The module is parsed with `ast` and brought to a
flat list of top-level statements (engine.frontend.pyfile.shape: a main guard's body,
the body of a test function that builds the fusion, `self.exec_nvfuser(...)` as the with
block and run it stands for, the legacy body without a with block as `with fd:` blocks).
Each statement is matched against the few shapes a repro may take (imports, the fusion
function or FusionDefinition subclass, the `with FusionDefinition() as fd:` block, the
`inputs = [...]` list, trailing `fd.execute(inputs)`); the calls inside the fusion body
are interpreted one by one against a fresh FusionDefinition. A fusion function may take
more parameters than the fd, given by its call in the with block (`fusion_func(fd,
1e-5, 4)`) or by literal defaults; its decorators (`@torch.no_grad()`) are recorded as
skipped, never evaluated. The plain Python that nvFuser's schedule tests use
on their own values is interpreted too, by the loader on the values it holds: list
methods (`selected.extend(...)`), a few pure builtins (list, len, zip, filter, map,
...), Python's math on numbers (`math.sqrt(n)`, `math.pi`; engine.frontend.pyfile.pure),
comprehensions, and the module's `inputs` read by `fd.from_pytorch(inputs[0])`. Any
other call, name or attribute in what is read raises FusionFileError naming the line.

Before the run, a top-level statement is read only when the fusion needs it (engine.
frontend.pyfile.needs): when it mentions the fusion (the fd, a Fusion, FusionDefinition
or a subclass, a fusion function, the nvfuser module) or a name a later read statement
reads (the fusion body's `N`, the inputs list's `torch`, the run's `inputs`), or rebinds
a name the loader holds. Other statements are skipped without being evaluated: helper
functions that do not take the fd (`def clearL2Cache(): ...`), classes, timing code,
prints. Imports bind names and run nothing: torch, nvfuser and math are read; any other
module's names are opaque (the import is recorded as skipped, and a use of one in what
is read is refused naming the line and the name), as are the names a skipped statement
binds and a read test function's parameters. `from X import *` of another module is
refused (it could rebind any name).

The inputs list (or the literal list given to `fd.execute([...])`) becomes InputSpecs
(engine.frontend.input_spec), read from the text and never run. An entry is a number
(`3`, `-float("inf")`) or a tensor: a call of TORCH_MAKERS (torch.randn, rand, randint,
ones, zeros, full, tensor, empty, empty_strided, arange, normal, torch.testing.make_tensor,
the *_like of those) or a name bound to one earlier (`t0 = torch.randn(4)`), then any of:
views (`.as_strided`, `.t()`, `.transpose`, `.permute`, `.expand`, `.view(2, 3)`,
`.reshape`, `.unsqueeze`, `.narrow`, `.mT`, indexing `[:, :6]`, `[::2]`, `[0]`, `[None]`,
...), copies (`.contiguous()`, `.clone()`, `.to(memory_format=...)`), dtype and device
changes (`.half()`, `.to('cuda', torch.bfloat16)`, `.cuda()`), in-place fills
(`.uniform_(a, b)`, `.normal_()`, `.random_(a, b)`, `.fill_(v)`), arithmetic with a number
(`* 10 + 1`, `-x`, `/ 2`) and a comparison with one (`torch.rand(4) < 0.5`). Views,
copies and dtypes are worked out by torch on the meta device, so sizes, strides, storage
offsets and dtypes are torch's own. Before the list, `torch.manual_seed(0)` is recognised
and not run, and numbers, sizes, dtypes and devices may be named (`N = 4`, `B, H = 2, 8`,
`dtype = torch.bfloat16`, `device = torch.device('cuda', 0)`); the list may be a list
comprehension over a range or a literal sequence, or grow by `inputs.append(...)` /
`inputs.extend(...)`, in a `for` loop too. Anything else in an entry (other tensor
methods, arithmetic between tensors, advanced indexing, torch.linspace, ...) is refused
with FusionFileError naming the line and the construct.

After the run, the repro's own checking code is skipped unread. The run is the first
top-level statement holding a recognised run call (`fd.execute(...)`, `fd.validate(...)`,
`out, = fs.execute(inputs)`, a `for _ in range(n):` loop of them). Every later top-level
statement, of any kind (eager references, asserts, prints of anything, `import numpy as
np`, `with torch.no_grad():`, timing loops with torch.cuda.synchronize() ...), is skipped
without being evaluated or imported, unless it (a) names the fusion (the fd, a Fusion,
FusionDefinition or a subclass of it, a fusion function, the nvfuser module) other than
to call a read-only method on it (the run and report methods, _INSPECT_METHODS) or to
print it, (b) rebinds a name the loader holds (the fusion's, torch, an enum, `print`,
the inputs list, a name the run's arguments spell) or stores into the inputs (`inputs[0]
= ...`), or (c) runs the fusion on a literal list of inputs when none was given before.
Those statements are read as before any run (a second fusion, a second inputs list,
`fd.sched.*` or `fd.ops.*` at the top level are refused, naming the line and why the
statement was not skipped). The whole file is still parsed first, so a syntax error, a
dunder name (but the `__name__` of a main guard) or too deep nesting anywhere refuses it.
What was skipped, before or after the run, is recorded on the loaded FusionDefinition as
`skipped_statements`: a list of engine.frontend.definition.SkippedStatement (first_line,
last_line, reason), in line order.

The reader lives in engine.frontend.pyfile, one job per module (see its docstring); this
module is its public face.
"""

from engine.frontend.pyfile.loader import MAX_DEPTH, MAX_FILE_BYTES, load_fusion, loads_fusion
from engine.frontend.pyfile.vocab import enum_namespaces

__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "enum_namespaces", "load_fusion", "loads_fusion"]
