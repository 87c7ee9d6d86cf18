"""esxdiag command line. Exit codes: see esxdiag.errors (and the README)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from esxdiag import __version__
from esxdiag.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, EsxdiagError
from esxdiag.result import SEVERITIES
from esxdiag.terminal import safe_text

EXIT_INTERNAL = 70


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="esxdiag", description="ESXi/vSphere VM network and CPU health: should the vmxnet3 RX rings be "
        "raised, or is the VM starved of CPU?")
    parser.add_argument("--version", action="version", version=f"esxdiag {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

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

    from esxdiag.compare.cli import register as register_diff
    from esxdiag.intake.cli import register as register_bundle

    register_bundle(sub)
    register_diff(sub)

    try:
        from esxdiag.collectors.cli import register
    except ImportError as exc:  # live collection not installed in this build
        if "esxdiag.collectors.cli" not in str(exc):
            raise
    else:
        register(sub, add_report_options)
    from esxdiag.fleet.cli import register as register_fleet

    register_fleet(sub)  # scan, history
    return parser


def add_report_options(p: argparse.ArgumentParser, config: bool = True) -> None:
    p.add_argument("--format", choices=("html", "json", "text", "rings"), default="html",
                   help="rings: only the per-vNIC ring verdicts with their numbers and commands")
    p.add_argument("-o", "--output", help="output file (html default: ./report.html; json/text default: stdout)")
    p.add_argument("--fail-on", choices=SEVERITIES, help="exit 1 when a finding of this severity or worse exists")
    if config:  # the live commands define --config themselves (it also holds [vcenter])
        p.add_argument("--config", help="INI file with a [thresholds] section")
    p.add_argument("--set", action="append", default=[], metavar="RULE.KEY=VALUE", help="override a threshold")


class ListKinds(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        from esxdiag.parsers import PARSERS

        for kind, entry in sorted(PARSERS.items()):
            print(f"{kind:24} {entry.about}".rstrip())
        parser.exit(EXIT_OK)


def cmd_parse(args: argparse.Namespace) -> int:
    from esxdiag.parsers import parse_file, to_jsonable

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
    import tempfile

    from esxdiag.config import load_thresholds
    from esxdiag.engine import analyze
    from esxdiag.intake import open_bundle

    thresholds = load_thresholds(args.config, args.set)
    with tempfile.TemporaryDirectory(prefix="esxdiag-intake-") as work:  # unpacked archives, derived files
        result = analyze(args.bundle, thresholds, open_bundle(args.bundle, Path(work)))
        return emit_report(result, args, Path(args.bundle))


def emit_report(result, args: argparse.Namespace, bundle_root: Path | None) -> int:
    """Write the report in the chosen format; print the terminal summary; map --fail-on to the exit code."""
    from esxdiag.reports.json_report import render_json
    from esxdiag.reports.text import render_text

    if args.format == "html":
        from esxdiag.reports.html import render_html

        out = Path(args.output or "report.html")
        out.write_text(render_html(result, bundle_root=bundle_root, report_path=out), encoding="utf-8")
        print(render_text(result), end="")
        print(safe_text(f"report: {out.resolve()}"))
    else:
        if args.format == "rings":
            from esxdiag.reports.rings import render_rings

            text = render_rings(result)
        else:
            text = render_json(result) if args.format == "json" else render_text(result)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
            print(safe_text(f"report: {Path(args.output).resolve()}"), file=sys.stderr)
        else:
            sys.stdout.write(text)
    worst = result.worst_severity()
    if args.fail_on and worst and SEVERITIES.index(worst) <= SEVERITIES.index(args.fail_on):
        return EXIT_FINDINGS
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except EsxdiagError as exc:
        print(f"esxdiag: {safe_text(exc.one_line())}", file=sys.stderr)
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
