"""`esxdiag parse KIND FILE` (one raw capture as JSON) and `esxdiag analyze BUNDLE` (a report)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from esxdiag.cli.output import add_report_options, emit, fail_on_code
from esxdiag.config import load_thresholds
from esxdiag.errors import EXIT_OK, EsxdiagError
from esxdiag.reports.formats import REPORT, RenderContext


def register(sub) -> None:
    p = sub.add_parser("parse", help="parse one raw capture and print it as JSON")
    p.add_argument("--list", action=ListKinds, nargs=0, help="list parser kinds and exit")
    p.add_argument("kind", help="parser kind (esxdiag parse --list shows them)")
    p.add_argument("file")
    p.add_argument("--vm", help="esxtop: keep only this VM")
    p.add_argument("--vcpus", type=int, help="esxtop: vCPU count for per-vCPU normalisation")
    p.set_defaults(func=cmd_parse)

    a = sub.add_parser("analyze", help="analyze a bundle directory and write a health report")
    a.add_argument("bundle", help="bundle directory, or a folder / sosreport / vm-support bundle without "
                   "manifest.json (directory or tarball; its manifest is inferred in memory)")
    add_report_options(a)
    a.set_defaults(func=cmd_analyze)


class ListKinds(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        from esxdiag import parsers
        for kind, entry in sorted(parsers.PARSERS.items()):  # read from the declarations on first use
            print(f"{kind:24} {entry.about}".rstrip())
        parser.exit(EXIT_OK)


def cmd_parse(args: argparse.Namespace) -> int:
    from esxdiag.parsers import parse_file, to_jsonable  # the parsers load only for the commands that parse
    options = {}
    if args.vm is not None or args.vcpus is not None:
        if args.kind != "esxtop":
            raise EsxdiagError("--vm/--vcpus apply to the esxtop kind only")
        options = {k: v for k, v in (("vm", args.vm), ("vcpus", args.vcpus)) if v is not None}
    record = parse_file(args.kind, args.file, **options)
    json.dump(to_jsonable(record), sys.stdout, indent=2, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")
    return EXIT_OK


def cmd_analyze(args: argparse.Namespace) -> int:
    from esxdiag.engine import analyze  # the per-VM analysis loads only for the commands that run it
    from esxdiag.intake import open_bundle
    thresholds = load_thresholds(args.config, args.set)
    with tempfile.TemporaryDirectory(prefix="esxdiag-intake-") as work:  # unpacked archives, derived files
        result = analyze(args.bundle, thresholds, open_bundle(args.bundle, Path(work)))
        emit(REPORT, args.format, result, args.output, RenderContext(bundle_root=Path(args.bundle), verbose=args.verbose))
        return fail_on_code(args.fail_on, result.worst_severity())
