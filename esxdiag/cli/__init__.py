"""esxdiag command line: one module per command family, each with its ``register(sub)``. Exit
codes: see esxdiag.errors (and the README). This is the top of the pipeline: the only place that
imports both collection (esxdiag.collectors) and analysis."""

from __future__ import annotations

import argparse
import os
import sys

from esxdiag import __version__
from esxdiag.cli import analyze, bundle, diff, docs, live, scan, serve
from esxdiag.cli.suggest import Parser, command_parser
from esxdiag.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EsxdiagError
from esxdiag.terminal import safe_text

EXIT_INTERNAL = 70
COMMANDS = (analyze, bundle, diff, live, scan, serve, docs)  # the order of `esxdiag --help`


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="esxdiag", description="ESXi/vSphere VM network and CPU health: should the vmxnet3 RX rings be "
        "raised, or is the VM starved of CPU?")
    parser.add_argument("--version", action="version", version=f"esxdiag {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's own usage, with the closest option names
        command_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.func(args)
    except EsxdiagError as exc:  # one line; a list of questions (esxdiag.intake.found.Questions) one per line
        for n, line in enumerate(exc.one_line().split("\n")):
            print(f"{'esxdiag: ' if n == 0 else ''}{safe_text(line)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("esxdiag: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(safe_text(f"esxdiag: {where}{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: one line, with the way to get the traceback
        if os.environ.get("ESXDIAG_DEBUG"):
            raise
        print(safe_text(f"esxdiag: internal error: {type(exc).__name__}: {exc} (set ESXDIAG_DEBUG=1 for a "
                        "traceback)"), file=sys.stderr)
        return EXIT_INTERNAL
