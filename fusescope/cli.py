"""The `fusescope` command line.

    fusescope [FILE]                  open the TUI on FILE (default: a bundled sample)
    fusescope show FILE --ir          print the fusion listing
    fusescope show FILE --transforms TV   print a TensorView's transform block
    fusescope show FILE --schedule    scheduler verdicts, the accepting scheduler, params, scheduled IR
    fusescope show FILE --why         the scheduling decisions (verdicts, heuristics), one per line
    fusescope show FILE --segments    segments, edges with bytes, the segmenter's decisions
    fusescope show FILE --cuda [--segment N] [--with-runtime]   generated CUDA kernels
    fusescope show FILE --kernel-ir [--segment N]   kernel IR
    fusescope show FILE --host-ir     the host-IR program (--rank R: a multi-device fusion's rank R)
    fusescope run FILE [--backend emulate|reference|cuda] [--profile] [--json]
    fusescope run FILE --ranks N [--backend B]   a multi-device fusion on N rank processes
    fusescope export FILE --format dot|json|mermaid|svg|png -o OUT
    fusescope export FILE --chart time|roofline|history -o OUT.svg
    (show, run, export: --size T0=4096,8192 --size 1024 for a file without an inputs list)
    fusescope serve [FILE]            the TUI in a web browser (needs textual-serve)
    fusescope list                    list the bundled samples

FILE may also be a session bundle (.json, saved with `run --save-bundle` or key b in the TUI):
`show BUNDLE --runs` prints its recorded runs, `run BUNDLE` replays it with its options.

FILE is a path or the name of a bundled sample. Mistakes a user can make (a missing file, a
malformed fusion, an unknown tensor) print one line and exit 2; only --debug shows tracebacks.
`run` exits 0 when every output matches the reference, 3 on a mismatch, 4 when the run failed
(an execution error, a crash or a timeout of the worker process, no GPU for cuda); ctrl+c
stops the worker process and exits 130. On a terminal, `run` and `show` draw a progress bar
on stderr once they have worked for a second (fusescope/cli_progress.py); piped output has none.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fusescope import samples
from fusescope.cli_multidevice import MultiDeviceCliError
from fusescope.cli_output import emit, emit_json, emit_kernels
from fusescope.cli_parsers import (
    export_parser,
    list_parser,
    run_parser,
    serve_parser,
    show_parser,
    top_parser,
)

if TYPE_CHECKING:
    from fusescope.cli_progress import Activity

EXIT_USAGE = 2
EXIT_INTERNAL = 1
EXIT_MISMATCH = 3
EXIT_RUN_FAILED = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by ctrl+c
SUBCOMMANDS = ("show", "list", "run", "export", "serve")


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    command = args_in[0] if args_in and args_in[0] in SUBCOMMANDS else None
    if command == "show":
        args = show_parser().parse_args(args_in[1:])
        run = _cmd_show
    elif command == "list":
        args = list_parser().parse_args(args_in[1:])
        run = _cmd_list
    elif command == "run":
        args = run_parser().parse_args(args_in[1:])
        run = _cmd_run
    elif command == "export":
        args = export_parser().parse_args(args_in[1:])
        run = _cmd_export
    elif command == "serve":
        args = serve_parser().parse_args(args_in[1:])
        run = _cmd_serve
    else:
        args = top_parser().parse_args(args_in)
        run = _cmd_tui
    try:
        return run(args)
    except BrokenPipeError:
        # The reader went away (`fusescope show ... | head`): no traceback, and none at exit
        # either, which is why stdout is pointed at devnull (the recipe of Python's docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INTERNAL
    except (CliError, MultiDeviceCliError) as e:
        print(f"fusescope: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # ctrl+c: a run's worker process was stopped on the way out (Worker.call).
        print("fusescope: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # a bug, not a user mistake: say so in one line unless --debug
        if args.debug:
            raise
        print(f"fusescope: internal error: {type(e).__name__}: {e} (rerun with --debug)", file=sys.stderr)
        return EXIT_INTERNAL


def _load(spec: str, activity: Activity | None = None):  # -> model.Session; model is imported here so `list` needs no engine
    from fusescope.model import LoadError, load_session, skipped_summary

    if activity is not None:
        activity.say(f"reading {spec}")

    path = samples.resolve(spec)
    try:
        session = load_session(path)
    except LoadError as e:
        hint = samples.did_you_mean(spec) if not path.exists() else ""
        raise CliError(f"{e}{hint}") from None
    skipped = skipped_summary(session.fd)
    if skipped is not None:  # on stderr: stdout stays the asked-for text
        print(f"note: {spec}: {skipped}", file=sys.stderr)
    return session


def _options(args: argparse.Namespace):  # -> model.CompileOptions
    from fusescope.model import CompileOptions, OptionError, parse_heuristic, parse_size, read_kernel_source

    if args.streams is not None and not 1 <= args.streams <= 64:
        raise CliError("--streams must be from 1 to 64")
    try:
        overrides = dict(parse_heuristic(text) for text in args.heuristic)
        sources = dict(read_kernel_source(text) for text in args.kernel_source)
        sizes = dict(parse_size(text) for text in args.size)
    except OptionError as e:
        raise CliError(str(e)) from None
    return CompileOptions(forwarding=not args.no_forwarding, force_scheduler=args.force_scheduler or None,
                          num_streams=args.streams or 4, device_model=args.device_model).with_(
        heuristic_overrides=overrides, kernel_sources=sources, input_sizes=sizes)


def _compiled(session, args: argparse.Namespace):  # -> model.CompileResult
    result = session.compile(_options(args))
    if result.error:
        raise CliError(f"compilation failed: {result.error}")
    return result


def _cmd_show(args: argparse.Namespace) -> int:
    from fusescope.cli_progress import Activity

    compiled_view = args.segments or args.cuda or args.kernel_ir or args.host_ir
    if args.json and not compiled_view:
        raise CliError("--json goes with --segments, --cuda, --kernel-ir or --host-ir")
    if args.segment is not None and not (args.cuda or args.kernel_ir):
        raise CliError("--segment goes with --cuda or --kernel-ir")
    if args.with_runtime and not args.cuda:
        raise CliError("--with-runtime goes with --cuda")
    with Activity() as activity:
        activity.say("loading the engine (torch)")
        session = _load(args.file, activity)
        info = session.multidevice()
        if info is not None:  # no single compilation: its program's steps (fusescope/cli_multidevice.py)
            from fusescope import cli_multidevice

            return cli_multidevice.show(session, info, args, emit, emit_json)
        if args.rank is not None:
            raise CliError(f"--rank goes with --host-ir of a multi-device fusion; {session.title} has no device mesh")
        compiled = None
        if compiled_view or args.schedule or args.why:
            activity.say(f"compiling {session.title} at its example inputs")
            compiled = _compiled(session, args)
    if args.ir:
        emit(session.listing)
    elif args.schedule or args.why:
        assert compiled is not None
        emit(compiled.schedule_report() if args.schedule else compiled.why())
    elif args.segments:
        assert compiled is not None
        emit_json(compiled.to_dict()) if args.json else emit(compiled.summary())
    elif args.cuda or args.kernel_ir:
        _show_kernels(compiled, args)
    elif args.runs:
        if not session.runs:
            raise CliError(f"{args.file} has no recorded runs (only a bundle saved after a run has some)")
        for k, run in enumerate(session.runs, start=1):
            emit(f"== run {k} of {len(session.runs)}\n" + run.report())
    elif args.host_ir:
        assert compiled is not None
        if compiled.host_ir is None:
            raise CliError("host IR is not available yet: this engine's compilation has no host-IR program")
        emit_json({"host_ir": compiled.host_ir}) if args.json else emit(compiled.host_ir)
    else:
        name = args.transforms if args.transforms.upper().startswith("T") else f"T{args.transforms}"
        name = "T" + name[1:]
        try:
            emit(session.transforms(name))
        except KeyError as e:
            raise CliError(e.args[0]) from None
    return 0


def _show_kernels(compiled, args: argparse.Namespace) -> None:  # compiled: model.CompileResult
    """--cuda / --kernel-ir: every segment, or the one --segment names."""
    if args.segment is not None:
        try:
            segments = [compiled.segment(args.segment)]
        except KeyError as e:
            raise CliError(e.args[0]) from None
        if not segments[0].is_kernel:
            s = segments[0]
            raise CliError(f"segment {s.id} ({s.scheduler}) has no kernel: it runs through the reference evaluator")
    else:
        segments = compiled.segments
    emit_kernels(segments, args)


def _cmd_run(args: argparse.Namespace) -> int:
    from fusescope.cli_progress import Activity, RunBar

    with Activity() as activity:
        activity.say("loading the engine (torch)")
        from fusescope.model import DEFAULT_RUN_TIMEOUT_S, CompileOptions

        session = _load(args.file, activity)
    timeout = args.timeout if args.timeout is not None else DEFAULT_RUN_TIMEOUT_S
    if timeout <= 0:
        raise CliError("--timeout must be positive")
    info = session.multidevice()
    if info is not None:  # N worker processes, a row and a timeline per rank
        from fusescope import cli_multidevice

        status = cli_multidevice.run_command(session, info, args, timeout, emit_json)
        return {"ok": 0, "mismatch": EXIT_MISMATCH}.get(status, EXIT_RUN_FAILED)
    if args.ranks is not None:
        raise CliError(f"{session.title} is not a multi-device fusion (no tensor has a device mesh): run it "
                       "without --ranks")
    options = _options(args)
    if session.runs and options == CompileOptions():
        options = session.runs[-1].options  # a bundle replays with the options it recorded
    with RunBar(args.backend, args.profile) as bar:
        result = session.run(args.backend, options, profile=args.profile, timeout=timeout, on_progress=bar.update)
    if args.save_bundle:
        from fusescope.bundle import BundleError, save

        try:
            save(session, args.save_bundle)
        except BundleError as e:
            raise CliError(str(e)) from None
    if args.json:
        emit_json(result.to_dict())
    elif result.segments or result.outputs:
        sys.stdout.write(result.report())
    sys.stdout.flush()
    if result.status == "ok":
        return 0
    kind = "mismatch" if result.status == "mismatch" else "error"
    print(f"fusescope: {kind}: {result.message}", file=sys.stderr)
    return EXIT_MISMATCH if result.status == "mismatch" else EXIT_RUN_FAILED


def _cmd_export(args: argparse.Namespace) -> int:
    from fusescope.model import ExportError

    if args.chart is not None:
        return _export_chart(args)
    if args.format is None:
        raise CliError("give --format dot|json|mermaid|svg|png (the segment graph) or --chart (a run's chart)")
    session = _load(args.file)
    to_stdout = args.output == "-"
    info = session.multidevice()
    if info is not None:  # the step graph: regions and communications
        from fusescope import cli_multidevice

        data = cli_multidevice.export(session, info, args.format, args.output)
        if to_stdout:
            sys.stdout.write(data if isinstance(data, str) else data.decode())
        return 0
    if to_stdout and args.format in ("svg", "png"):
        raise CliError(f"{args.format} is written to a file: give -o OUT.{args.format}")
    try:
        data = session.export(args.format, None if to_stdout else args.output, _options(args))
    except ExportError as e:
        raise CliError(str(e)) from None
    if to_stdout:
        sys.stdout.write(data if isinstance(data, str) else data.decode())
    return 0


def _export_chart(args: argparse.Namespace) -> int:
    """--chart: a bundle's recorded runs, else a run of the file now (as `run` makes it)."""
    from fusescope.cli_progress import RunBar
    from fusescope.model import CompileOptions
    from fusescope.render.chart_svg import ChartError, chart_svg

    if args.format not in (None, "svg"):
        raise CliError("a chart is written as svg: leave out --format or give --format svg")
    session = _load(args.file)
    if session.multidevice() is not None:
        raise CliError("charts are of single-device runs; `fusescope run FILE --ranks N` prints a multi-device "
                       "run's per-rank timeline")
    runs = list(session.runs)
    if not runs or _options(args) != CompileOptions():
        with RunBar(args.backend, args.profile) as bar:
            result = session.run(args.backend, _options(args), profile=args.profile, on_progress=bar.update)
        if result.status not in ("ok", "mismatch"):
            raise CliError(f"the run failed ({result.status}): {result.message}")
        runs = list(session.runs)
    try:
        svg = chart_svg(args.chart, runs)
    except ChartError as e:
        raise CliError(str(e)) from None
    if args.output == "-":
        sys.stdout.write(svg)
        return 0
    try:
        Path(args.output).write_text(svg, encoding="utf-8")
    except OSError as e:
        raise CliError(f"cannot write {args.output}: {e.strerror or e}") from None
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    found = samples.list_samples()
    if not found:
        raise CliError(f"no bundled samples in {samples.samples_dir()}")
    width = max(len(s.name) for s in found)
    columns = os.get_terminal_size().columns if sys.stdout.isatty() else 0
    for s in found:
        line = f"{s.name:<{width}}  {s.summary}".rstrip()
        if columns > width + 30:  # a terminal: the summary wraps under itself, never cut
            import textwrap

            line = textwrap.fill(line, columns - 1, subsequent_indent=" " * (width + 2))
        print(line)
    return 0


def _cmd_tui(args: argparse.Namespace) -> int:
    if args.file is None:
        sample = samples.default_sample()
        if sample is None:
            raise CliError(f"no file given and no bundled samples in {samples.samples_dir()}")
        path: Path | str = sample.path
    else:
        path = args.file
    from fusescope.model import CompileOptions, OptionError, parse_size

    try:
        options = CompileOptions().with_(input_sizes=dict(parse_size(t) for t in args.size))
    except OptionError as e:
        raise CliError(str(e)) from None
    session = _load(str(path))
    from fusescope.app import FusescopeApp  # Textual loads only when the TUI is wanted

    FusescopeApp(session, options).run()
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from textual_serve.server import Server
    except ImportError:
        raise CliError("fusescope serve needs the textual-serve package: pip install textual-serve") from None
    import shlex

    command = f"{shlex.quote(sys.executable)} -m fusescope"
    if args.file:
        _load(args.file)  # a bad file is refused here, in one line, not in the browser
        command += f" {shlex.quote(str(samples.resolve(args.file)))}"
    Server(command, host=args.host, port=args.port, title="fusescope").serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
