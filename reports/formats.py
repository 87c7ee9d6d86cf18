"""One renderer table per result: the per-VM report, the ring answer, the fleet report, the diff and
a VM's scan history. `--format` choices come from these tables, and every command writes through
them (esxdiag.cli.output.emit), so adding a format is one render function and one entry here.

A renderer takes the result and a RenderContext and returns text. A format with ``default_file``
is written there when no -o is given (with the table's terminal summary on stdout); the others go
to stdout, or to -o. Each renderer's module is imported when it first renders (a scan that writes
JSON never loads the HTML templates)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable



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
    from esxdiag.reports import text
    return text.render_text(result, verbose=ctx.verbose)


def _fleet_summary(document: dict, ctx: RenderContext) -> str:
    from esxdiag.reports import fleet_text
    return fleet_text.render_fleet_text(document, ctx.top, ctx.width)


def _report_html(result, ctx: RenderContext) -> str:
    from esxdiag.reports import html
    return html.render_html(result, bundle_root=ctx.bundle_root, report_path=ctx.output)


def _report_json(result, ctx: RenderContext) -> str:
    from esxdiag.reports import json_report
    return json_report.render_json(result)


def _rings(result, ctx: RenderContext) -> str:
    from esxdiag.reports import rings
    return rings.render_rings(result)


def _fleet_html(document: dict, ctx: RenderContext) -> str:
    from esxdiag.reports import fleet_html
    return fleet_html.render_fleet_html(document, ctx.vm_href)


def _fleet_json(document: dict, ctx: RenderContext) -> str:
    from esxdiag.reports import fleet_json
    return fleet_json.render_fleet_json(document)


def _fleet_csv(document: dict, ctx: RenderContext) -> str:
    from esxdiag.reports import fleet_csv
    return fleet_csv.render_fleet_csv(document)


def _fleet_metrics(document: dict, ctx: RenderContext) -> str:
    from esxdiag.reports import fleet_metrics
    return fleet_metrics.render_fleet_metrics(document)


def _diff(kind: str) -> Callable[[dict, RenderContext], str]:
    def render(document: dict, ctx: RenderContext) -> str:
        from esxdiag.reports import diff
        return {"text": diff.render_diff_text, "json": diff.render_diff_json, "html": diff.render_diff_html}[kind](
            document)
    return render


def _history_text(found: dict, ctx: RenderContext) -> str:
    from esxdiag.reports import history
    return history.render_history_text(found)


def _history_html(found: dict, ctx: RenderContext) -> str:
    from esxdiag.reports import history_html
    return history_html.render_history_html(found)


REPORT = FormatTable("report", {
    "html": Format(_report_html, _HTML, default_file="report.html"),
    "json": Format(_report_json, _JSON),
    "text": Format(_text_summary, _TEXT),
    "rings": Format(_rings, _TEXT),
}, default="html", summary=_text_summary)

RINGS = FormatTable("report", {
    "text": REPORT.formats["rings"],
    "json": REPORT.formats["json"],
}, default="text")

FLEET = FormatTable("report", {
    "html": Format(_fleet_html, _HTML, default_file="fleet-report.html"),
    "json": Format(_fleet_json, _JSON),
    "csv": Format(_fleet_csv, "text/csv; charset=utf-8"),
    "openmetrics": Format(_fleet_metrics, "application/openmetrics-text; version=1.0.0; charset=utf-8"),
    "text": Format(_fleet_summary, _TEXT),
}, default="html", summary=_fleet_summary, summary_with_output=True)

DIFF = FormatTable("diff", {
    "text": Format(_diff("text"), _TEXT),
    "json": Format(_diff("json"), _JSON),
    "html": Format(_diff("html"), _HTML),
}, default="text")

HISTORY = FormatTable("history", {
    "text": Format(_history_text, _TEXT),
    "json": Format(lambda h, ctx: json.dumps(h["rows"], indent=2, ensure_ascii=False) + "\n", _JSON),
    "html": Format(_history_html, _HTML),
}, default="text")
