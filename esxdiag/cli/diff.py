"""`esxdiag diff BEFORE AFTER`: each side a bundle, a folder / sosreport / vm-support bundle, or a
report JSON written by `esxdiag analyze --format json`."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from esxdiag.cli.output import emit
from esxdiag.config import load_thresholds
from esxdiag.errors import EXIT_OK
from esxdiag.reports.formats import DIFF


def register(sub) -> None:
    d = sub.add_parser("diff", help="compare two captures of the same VM (before and after a change)")
    d.add_argument("before", help="bundle, folder, sosreport, vm-support bundle or report JSON")
    d.add_argument("after")
    d.add_argument("--vm", help="the VM to compare (default: every VM in both)")
    d.add_argument("--format", choices=DIFF.choices(), default=DIFF.default, help="(default: %(default)s)")
    d.add_argument("-o", "--output", help="output file (default: stdout)")
    d.add_argument("--config", help="INI file with a [thresholds] section (applied to both sides)")
    d.add_argument("--set", action="append", default=[], metavar="RULE.KEY=VALUE", help="override a threshold")
    d.set_defaults(func=cmd_diff)


def load_side(source: str, thresholds: dict[str, float], work: Path) -> dict[str, Any]:
    from esxdiag.engine import analyze  # the per-VM analysis loads only for the commands that run it
    from esxdiag.intake import open_bundle
    from esxdiag.parsers.report_json import read_report_document
    from esxdiag.reports.json_report import render_json
    path = Path(source)
    if path.is_file() and path.suffix.lower() == ".json":
        doc = read_report_document(path)
    else:
        doc = json.loads(render_json(analyze(path, thresholds, open_bundle(path, work))))
    doc.setdefault("bundle", {})["path"] = str(source)
    return doc


def cmd_diff(args: argparse.Namespace) -> int:
    from esxdiag.compare import compare
    thresholds = load_thresholds(args.config, args.set)
    with tempfile.TemporaryDirectory(prefix="esxdiag-diff-") as work:
        before = load_side(args.before, thresholds, Path(work) / "before")
        after = load_side(args.after, thresholds, Path(work) / "after")
    diff = compare(before, after, args.vm)
    emit(DIFF, args.format, diff, args.output)
    return EXIT_OK
