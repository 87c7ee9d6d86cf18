"""One renderer table per result: the per-VM report, the ring answer, the fleet report, the diff and
a VM's scan history. `--format` choices come from these tables, and every command writes through
them (esxdiag.cli.output.emit), so adding a format is one render function and one entry here.

A renderer takes the result and a RenderContext and returns text. A format with ``default_file``
is written there when no -o is given (with the table's terminal summary on stdout); the others go
to stdout, or to -o."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from esxdiag.reports import diff, fleet_csv, fleet_html, fleet_json, fleet_metrics, fleet_text, history
from esxdiag.reports import history_html, html, json_report, rings, text


@dataclass(frozen=True)
class RenderContext:
    output: Path | None = None  # where the text will be written: links in HTML are relative to it
    bundle_root: Path | None = None  # the bundle the report rests on (HTML links to its captures)
    top: int = 10  # rows in the fleet's terminal table
    vm_href: Callable[[dict], str] | None = None  # a fleet row -> its VM's page (esxdiag serve), linked from HTML
    verbose: bool = False  # the terminal summary also lists every rule skipped and why
    width: int | None = None  # the terminal's columns for tables (None: this terminal's)


@dataclass(frozen=True)
class Format:
    render: Callable[[Any, RenderContext], str]
    media_type: str  # what an HTTP server answers with
    default_file: str | None = None  # written here without -o; else stdout


@dataclass(frozen=True)
class FormatTable:
    label: str  # printed before the path of a written file: "report: /path"
    formats: dict[str, Format]
    default: str
    summary: Callable[[Any, RenderContext], str] | None = None  # the terminal summary beside a written file
    summary_with_output: bool = False  # also when -o names a file of another format (on stderr)

    def choices(self) -> tuple[str, ...]:
        return tuple(self.formats)


_HTML, _JSON, _TEXT = "text/html; charset=utf-8", "application/json", "text/plain; charset=utf-8"


def _text_summary(result, ctx: RenderContext) -> str:
    return text.render_text(result, verbose=ctx.verbose)


def _fleet_summary(document: dict, ctx: RenderContext) -> str:
    return fleet_text.render_fleet_text(document, ctx.top, ctx.width)


REPORT = FormatTable("report", {
    "html": Format(lambda r, ctx: html.render_html(r, bundle_root=ctx.bundle_root, report_path=ctx.output), _HTML,
                   default_file="report.html"),
    "json": Format(lambda r, ctx: json_report.render_json(r), _JSON),
    "text": Format(_text_summary, _TEXT),
    "rings": Format(lambda r, ctx: rings.render_rings(r), _TEXT),
}, default="html", summary=_text_summary)

RINGS = FormatTable("report", {
    "text": REPORT.formats["rings"],
    "json": REPORT.formats["json"],
}, default="text")

FLEET = FormatTable("report", {
    "html": Format(lambda d, ctx: fleet_html.render_fleet_html(d, ctx.vm_href), _HTML,
                   default_file="fleet-report.html"),
    "json": Format(lambda d, ctx: fleet_json.render_fleet_json(d), _JSON),
    "csv": Format(lambda d, ctx: fleet_csv.render_fleet_csv(d), "text/csv; charset=utf-8"),
    "openmetrics": Format(lambda d, ctx: fleet_metrics.render_fleet_metrics(d),
                          "application/openmetrics-text; version=1.0.0; charset=utf-8"),
    "text": Format(_fleet_summary, _TEXT),
}, default="html", summary=_fleet_summary, summary_with_output=True)

DIFF = FormatTable("diff", {
    "text": Format(lambda d, ctx: diff.render_diff_text(d), _TEXT),
    "json": Format(lambda d, ctx: diff.render_diff_json(d), _JSON),
    "html": Format(lambda d, ctx: diff.render_diff_html(d), _HTML),
}, default="text")

HISTORY = FormatTable("history", {
    "text": Format(lambda h, ctx: history.render_history_text(h), _TEXT),
    "json": Format(lambda h, ctx: json.dumps(h["rows"], indent=2, ensure_ascii=False) + "\n", _JSON),
    "html": Format(lambda h, ctx: history_html.render_history_html(h), _HTML),
}, default="text")
