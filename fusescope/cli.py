"""The `fusescope` command line.

    fusescope [FILE]                  open the TUI on FILE (default: a bundled sample)
    fusescope show FILE --ir          print the fusion listing
    fusescope show FILE --transforms TV   print a TensorView's transform block
    fusescope show FILE --schedule    scheduler verdicts, the accepting scheduler, params, scheduled IR
    fusescope show FILE --why         the scheduling decisions (verdicts, heuristics), one per line
    fusescope list                    list the bundled samples

FILE is a path or the name of a bundled sample. Mistakes a user can make (a missing file, a
malformed fusion, an unknown tensor) print one line and exit 2; only --debug shows tracebacks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from fusescope import samples

EXIT_USAGE = 2
EXIT_INTERNAL = 1
SUBCOMMANDS = ("show", "list")


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 2."""


def _top_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fusescope",
        description="Interactive debugger for the engine's fusions.",
        epilog="commands: show FILE --ir | --transforms TV | --schedule | --why;  list.  "
        "FILE may be a path or a bundled sample's name (see `fusescope list`).",
    )
    p.add_argument("file", nargs="?", help="fusion file to open (default: the bundled seed-001 sample)")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def _show_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fusescope show", description="Print facts about a fusion.")
    p.add_argument("file", help="fusion file or bundled sample name")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--ir", action="store_true", help="the fusion listing (Inputs/Outputs/%%kernel_math)")
    what.add_argument("--transforms", metavar="TV", help="the transform block of a TensorView, e.g. T3")
    what.add_argument(
        "--schedule",
        action="store_true",
        help="every scheduler's verdict, the accepting scheduler, its parameters and the scheduled IR "
        "(at the file's example inputs; the whole fusion as one group: no segmenter yet)",
    )
    what.add_argument(
        "--why", action="store_true", help="the scheduling decisions: verdicts and heuristic derivations"
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def _list_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fusescope list", description="List the bundled sample fusions.")
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    command = args_in[0] if args_in and args_in[0] in SUBCOMMANDS else None
    if command == "show":
        args = _show_parser().parse_args(args_in[1:])
        run = _cmd_show
    elif command == "list":
        args = _list_parser().parse_args(args_in[1:])
        run = _cmd_list
    else:
        args = _top_parser().parse_args(args_in)
        run = _cmd_tui
    try:
        return run(args)
    except BrokenPipeError:
        # The reader went away (`fusescope show ... | head`): no traceback, and none at exit
        # either, which is why stdout is pointed at devnull (the recipe of Python's docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INTERNAL
    except CliError as e:
        print(f"fusescope: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # a bug, not a user mistake: say so in one line unless --debug
        if args.debug:
            raise
        print(f"fusescope: internal error: {type(e).__name__}: {e} (rerun with --debug)", file=sys.stderr)
        return EXIT_INTERNAL


def _load(spec: str):  # -> model.Session; model is imported here so `list` needs no engine
    from fusescope.model import LoadError, load_session

    try:
        return load_session(samples.resolve(spec))
    except LoadError as e:
        raise CliError(str(e)) from None


def _emit(text: str) -> None:
    """Plain text when piped (exactly what the engine printed); coloured on a terminal."""
    if sys.stdout.isatty():
        from rich.console import Console

        from fusescope.render.highlight import highlight

        # soft_wrap: long IR lines stay single lines, so what is copied from the terminal is exact.
        Console(highlight=False, soft_wrap=True).print(highlight(text), end="")
    else:
        sys.stdout.write(text)


def _cmd_show(args: argparse.Namespace) -> int:
    session = _load(args.file)
    if args.ir:
        _emit(session.listing)
    elif args.schedule or args.why:
        result = session.schedule()
        if not result.verdicts:  # nothing was decided (e.g. no inputs list): only the error
            raise CliError(result.error or "no scheduling decisions were made")
        _emit(result.report() if args.schedule else result.why())
        if result.error:
            # The decisions above explain the failure; the exit status and one line say it.
            sys.stdout.flush()
            raise CliError(f"no schedule: {result.error}")
    else:
        name = args.transforms if args.transforms.upper().startswith("T") else f"T{args.transforms}"
        name = "T" + name[1:]
        try:
            _emit(session.transforms(name))
        except KeyError as e:
            raise CliError(e.args[0]) from None
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    found = samples.list_samples()
    if not found:
        raise CliError(f"no bundled samples in {samples.samples_dir()}")
    width = max(len(s.name) for s in found)
    for s in found:
        print(f"{s.name:<{width}}  {s.summary}".rstrip())
    return 0


def _cmd_tui(args: argparse.Namespace) -> int:
    if args.file is None:
        sample = samples.default_sample()
        if sample is None:
            raise CliError(f"no file given and no bundled samples in {samples.samples_dir()}")
        path: Path | str = sample.path
    else:
        path = args.file
    session = _load(str(path))
    from fusescope.app import FusescopeApp  # Textual loads only when the TUI is wanted

    FusescopeApp(session).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
