"""Writing a result in the chosen format (through its renderer table in esxdiag.reports.formats),
the options every report command shares, and --fail-on as an exit code."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from esxdiag.errors import EXIT_FINDINGS, EXIT_OK
from esxdiag.reports.formats import REPORT, FormatTable, RenderContext
from esxdiag.result import SEVERITIES
from esxdiag.terminal import safe_text


def add_report_options(p: argparse.ArgumentParser, config: bool = True, output_help: str =
                       "output file (default: html ./report.html; json, text, rings: stdout)") -> None:
    p.add_argument("--format", choices=REPORT.choices(), default=REPORT.default,
                   help="html: one offline file plus the terminal summary; json: the canonical document; text: the "
                   "terminal summary; rings: only the per-vNIC ring verdicts with their numbers and commands "
                   "(default: %(default)s)")
    p.add_argument("-o", "--output", help=output_help)
    p.add_argument("--fail-on", choices=SEVERITIES, help="exit 1 when a finding of this severity or worse exists")
    if config:  # the live commands define --config themselves (it also holds [vcenter])
        p.add_argument("--config", help="INI file with a [thresholds] section")
    p.add_argument("--set", action="append", default=[], metavar="RULE.KEY=VALUE", help="override a threshold")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="the terminal summary also lists each rule that was skipped, and why")


def emit(table: FormatTable, name: str, result: Any, output: str | Path | None,
         context: RenderContext = RenderContext(), quiet: bool = False) -> Path | None:
    """Render ``result`` as format ``name`` of ``table``; write it to ``output`` (or the format's
    default file) and say where (unless ``quiet``: the caller says it), or to stdout. Returns the
    file written, if any."""
    fmt = table.formats[name]
    path = Path(output) if output else (Path(fmt.default_file) if fmt.default_file else None)
    text = fmt.render(result, dataclasses.replace(context, output=path))
    if path is None:
        sys.stdout.write(text)
        return None
    path.write_text(text, encoding="utf-8")
    if quiet:
        return path
    stream = sys.stdout if fmt.default_file else sys.stderr  # a document kept on disk: its summary is the output
    if table.summary and (fmt.default_file or table.summary_with_output):
        print(table.summary(result, context), end="", file=stream)
    print(safe_text(f"{table.label}: {path.resolve()}"), file=stream)
    return path


def fail_on_code(fail_on: str | None, worst: str | None) -> int:
    """1 when the worst severity found is at or above --fail-on, else 0."""
    if fail_on and worst and SEVERITIES.index(worst) <= SEVERITIES.index(fail_on):
        return EXIT_FINDINGS
    return EXIT_OK
