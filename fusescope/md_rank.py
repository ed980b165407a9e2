"""One rank of `fusescope run FILE --ranks N`: a process started by fusescope.md_run with the
torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT).

    python -m fusescope.md_rank RESULT.json FUSION.py TITLE BACKEND

It reads the fusion file, makes the global example inputs (the same on every rank: one seed),
takes this rank's shard of each (engine.multidevice.shard_tensor), runs the program
(engine.multidevice.execute, with a timeline) and compares each output with this rank's shard
of the unsharded reference (engine.reference.evaluate of the whole fusion on the global
inputs). The result is written to RESULT.json as plain data; a failure is written there too,
with its traceback.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

SEED = 0


def _process_group(backend: str) -> None:
    """gloo for the CPU back ends, set up here from the environment (the Communicator reuses
    it; on a machine with GPUs it would pick NCCL); NCCL for cuda, by the Communicator."""
    import torch.distributed as dist

    if backend != "cuda" and not dist.is_initialized():
        dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))


def run_rank(source: str, title: str, backend: str) -> dict[str, Any]:
    import torch

    import engine.multidevice as md
    from engine import loads_fusion
    from engine.reference import evaluate
    from fusescope.model import _check  # the tolerance of single-device runs

    fd = loads_fusion(source, title)
    if backend == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("the cuda back end needs a GPU per rank (torch sees none here); use reference or emulate")
    _process_group(backend)
    comm = md.Communicator.instance()
    rank = comm.rank()
    dev = torch.device("cuda", comm.local_rank() % torch.cuda.device_count()) if backend == "cuda" \
        else torch.device("cpu")
    program = md.program_of(fd)
    if program is None:
        raise md.MultiDeviceError("no tensor of this fusion has a device mesh: it is not a multi-device fusion")
    xs = fd.example_inputs(device="cpu", seed=SEED)
    local = [md.shard_tensor(x, tv, device=rank).to(dev) if isinstance(x, torch.Tensor) else x
             for x, tv in zip(xs, fd.fusion.inputs)]
    refs = evaluate(fd.fusion, xs)
    timeline: list[Any] = []
    start = time.perf_counter()
    outs = md.execute(fd, local, backend=backend, timeline=timeline)
    wall_ms = (time.perf_counter() - start) * 1e3
    checks = []
    for k, (v, out, ref) in enumerate(zip(fd.fusion.outputs, outs, refs)):
        want = md.shard_tensor(ref, program.outputs[k], device=rank)
        err, tol, ok, note, _ = _check(out.cpu(), want)
        checks.append({"name": v.short_name, "shape": list(out.shape), "max_error": err, "tolerance": tol,
                       "ok": ok, "note": note})
    bad = [c["name"] for c in checks if not c["ok"]]
    return {
        "rank": rank, "status": "mismatch" if bad else "ok",
        "message": f"{', '.join(bad)} differ from the reference" if bad else
                   f"{len(checks)} output(s) match the reference shard",
        "device": f"{comm.backend()} on {dev}", "wall_ms": wall_ms, "outputs": checks,
        "timeline": [{"step": s.step, "kind": s.kind, "start_ms": s.start * 1e3, "end_ms": s.end * 1e3,
                      "stream": s.stream}
                     for s in timeline],
    }


def main(argv: list[str]) -> int:
    result_path, fusion_path, title, backend = argv
    rank = int(os.environ.get("RANK", "0"))
    result: dict[str, Any] = {"rank": rank, "status": "error", "message": "", "outputs": [], "timeline": []}
    try:
        result = run_rank(Path(fusion_path).read_text(encoding="utf-8"), title, backend)
    except Exception as e:
        message = " ".join(f"{type(e).__name__}: {e}".split())
        result.update(message=message, traceback=traceback.format_exc())
        print(traceback.format_exc(), file=sys.stderr, flush=True)
    finally:
        tmp = Path(result_path + ".tmp")
        tmp.write_text(json.dumps(result), encoding="utf-8")
        tmp.replace(result_path)  # whole or absent: the launcher never reads half a file
    try:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # a peer gone already: nothing left to tear down politely
        pass
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
