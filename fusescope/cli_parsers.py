"""The command line's argument parsers, one per command (fusescope/cli.py runs them). Only the
standard library: `fusescope --help` and `list` need neither the engine nor Textual."""

from __future__ import annotations

import argparse

BACKENDS = ("emulate", "reference", "cuda")  # model.BACKENDS; repeated so --help needs no engine
EXPORT_FORMATS = ("dot", "json", "mermaid", "svg", "png")
CHARTS = ("time", "roofline", "history")  # render.charts.CHARTS, repeated as BACKENDS is

TOP_EPILOG = """commands (each has its own --help):
  show FILE --ir | --transforms TV | --schedule | --why | --segments | --cuda | --kernel-ir |
            --host-ir | --runs          print facts about a fusion
  run FILE [--backend B] [--profile]    run it in a worker process and check it against the reference
  run FILE --ranks N [--backend B]      a multi-device fusion on N ranks, each checked against its shard
  export FILE --format F -o OUT         the segment graph as dot, json, mermaid, svg or png
  export FILE --chart C -o OUT.svg      a chart of a run: time, roofline or history
  serve [FILE]                          the TUI in a web browser (needs textual-serve)
  list                                  the bundled samples
show, run, export and the TUI take --size NAME=N,... | N for a file without an inputs list.

FILE may be a path or a bundled sample's name (see `fusescope list`)."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fusescope")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def top_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fusescope",
        description="Interactive debugger for the engine's fusions: with no command, the TUI on FILE.",
        epilog=TOP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", help="fusion file to open (default: the bundled seed-001 sample)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N,... | N",
                   help="for a file without an inputs list: input sizes, as `show --size` takes them (the "
                   "Options tab's Input sizes field too)")
    p.add_argument("--version", action="version", version=f"fusescope {_version()}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def show_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fusescope show", description="Print facts about a fusion.")
    p.add_argument("file", help="fusion file or bundled sample name")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--ir", action="store_true", help="the fusion listing (Inputs/Outputs/%%kernel_math)")
    what.add_argument("--transforms", metavar="TV", help="the transform block of a TensorView, e.g. T3")
    what.add_argument(
        "--schedule",
        action="store_true",
        help="per segment: every scheduler's verdict, the accepting scheduler, its parameters and how "
        "they were derived, and the scheduled IR (at the file's example inputs)",
    )
    what.add_argument(
        "--why", action="store_true", help="the decisions, one per line: the segmenter's merges and forwards, then each segment's "
        "verdicts and heuristic derivations"
    )
    what.add_argument(
        "--segments", action="store_true",
        help="the compiled segments (scheduler, ops, inputs, outputs), the edges between them with "
        "their bytes, the segmenter's decisions and nvFuser's Segmented_Fusion dump",
    )
    what.add_argument("--cuda", action="store_true",
                      help="the generated CUDA kernel of each segment, without the runtime headers "
                      "(as NVFUSER_DUMP=cuda_kernel prints it; see --with-runtime)")
    what.add_argument("--kernel-ir", action="store_true", help="the kernel IR of each kernel")
    what.add_argument("--host-ir", action="store_true", help="the host-IR program (when the engine has one)")
    what.add_argument("--runs", action="store_true", help="a bundle's recorded runs (no GPU needed)")
    p.add_argument("--segment", type=int, metavar="N", help="with --cuda or --kernel-ir: only segment N")
    p.add_argument("--rank", type=int, metavar="R",
                   help="with --host-ir of a multi-device fusion: the host IR rank R runs (default 0)")
    p.add_argument("--with-runtime", action="store_true",
                   help="with --cuda: each kernel as the standalone file that is compiled, runtime headers "
                   "included (what --kernel-source N=PATH.cu takes)")
    p.add_argument("--json", action="store_true",
                   help="machine-readable output (with --segments, --cuda, --kernel-ir, --host-ir)")
    _add_compile_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def _add_compile_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-forwarding", action="store_true",
                   help="compile with the segmenter's input forwarding off")
    p.add_argument("--force-scheduler", metavar="NAME", help="use this scheduler for every segment (if it accepts)")
    p.add_argument("--device-model", choices=("H100", "H200", "A100"),
                   help="schedule for this GPU model (default: the real GPU, else H200)")
    p.add_argument("--streams", type=int, metavar="N", help="numberOfStreams of stream-parallel host loops (default 4)")
    p.add_argument("--heuristic", action="append", default=[], metavar="KEY=VALUE",
                   help="override a heuristic parameter, e.g. vectorization_factor=2 or g1.lparams.bdimx=128 "
                   "(repeatable)")
    p.add_argument("--kernel-source", action="append", default=[], metavar="N=PATH.cu",
                   help="replace segment N's generated kernel with this CUDA file (same kernel name and "
                   "parameters; start from `show FILE --cuda --segment N --with-runtime`); repeatable")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N,... | N",
                   help="for a file without an inputs list: the sizes of an input (T0=4096,8192: every axis, "
                   "or only its symbolic ones), of a symbolic size or a scalar input (i0=64), or N for every "
                   "other symbolic size; the example inputs are made from the definition (repeatable)")


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fusescope run",
        description="Compile the fusion, run it on the file's example inputs in a worker process and "
        "check every output against the reference evaluator.",
        epilog="exit status: 0 all outputs match, 3 mismatch, 4 the run failed, 2 usage or load error",
    )
    p.add_argument("file", help="fusion file or bundled sample name")
    p.add_argument("--backend", choices=BACKENDS, default="emulate",
                   help="emulate: the CUDA compiled with g++ and run on the CPU (default); reference: "
                   "torch on the CPU; cuda: the GPU")
    p.add_argument("--profile", action="store_true",
                   help="profile each kernel (GPU: CUDA events, GB/s, %% of peak, registers, local memory, occupancy)")
    p.add_argument("--json", action="store_true", help="the result as JSON")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="stop the worker process after S seconds (default 300)")
    p.add_argument("--ranks", type=int, metavar="N",
                   help="a multi-device fusion: run it on N worker processes with the torchrun environment "
                   "(gloo on the CPU back ends, NCCL and a GPU per rank on cuda); default: its mesh's size")
    p.add_argument("--save-bundle", metavar="OUT.json",
                   help="save the session (fusion, options, this run's results, device, versions) as a bundle")
    _add_compile_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def export_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fusescope export", description="Export the segment graph, or a chart of a run as SVG.",
        epilog="--chart draws the Run tab's chart from the file's run (on --backend, default emulate; "
        "--profile on a GPU adds bandwidth and achieved FLOP/s), or from a bundle's recorded runs")
    p.add_argument("file", help="fusion file, bundle or bundled sample name")
    p.add_argument("--chart", choices=CHARTS, default=None,
                   help="time: time and bandwidth per segment; roofline: FLOP/byte of each segment against "
                   "the device's bandwidth and FP32 ceilings; history: a bar per run (a bundle's runs)")
    p.add_argument("--backend", choices=BACKENDS, default="emulate", help="with --chart: the back end to run on")
    p.add_argument("--profile", action="store_true", help="with --chart: profile each kernel")
    p.add_argument("--format", choices=EXPORT_FORMATS, default=None,
                   help="dot (graphviz), json (versioned schema), mermaid, or an svg or png image "
                        "(drawn by the graphviz-pure package installed with fusescope)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="file to write; - for stdout (text formats and charts)")
    _add_compile_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def serve_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fusescope serve",
                                description="Serve the TUI in a web browser (needs the textual-serve package).")
    p.add_argument("file", nargs="?", help="fusion file or bundle to open (default: a bundled sample)")
    p.add_argument("--host", default="localhost", help="address to listen on (default localhost)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def list_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fusescope list", description="List the bundled sample fusions.")
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    return p
