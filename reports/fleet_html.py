"""The fleet report as one offline HTML file that stays usable at 10,000 VMs.

Server-rendered (no script needed): the counts per severity and class, the top suspects (printed),
the scatter of drop rate against worst-vCPU %RDY (inline SVG), rollups per cluster and host,
changes since the previous scan, deep checks. Every VM: one JSON blob in <script
type="application/json">, shown by one small inline script (templates/fleet.js) as a table that the
class cards filter, a search box finds in, a header click sorts and that pages (PAGE_SIZE rows), each
row's notes folded. Autoescaped throughout; the blob is JSON with <, > and & written as \\u escapes, so
no VM name can end the script element; the CSP allows that one script by its SHA-256 and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import json
import math
from urllib.parse import quote

from markupsafe import Markup

from esxdiag.reports import html
from esxdiag.reports.fleet_text import calm_line, headline
from esxdiag.vocabulary import FLEET_CLASSES, SEVERITIES, FleetClass, needs_attention

C = FleetClass
CLASS_COLOURS = {C.RING_EXHAUSTION: "#6d0016", C.CPU_AND_DROPS: "#7b2fa3", C.RING_SUSPECT: "#b00020",
                 C.UPLINK_LOSS: "#005f73", C.DROPS_NOT_RING: "#8c2d5a", C.CPU_LIMIT: "#c05800",
                 C.CPU_CONTENTION: "#8a5300", C.EMULATED_NIC: "#0b5cad", C.NO_DATA: "#888888", C.HEALTHY: "#1e6b35"}
# the scatter's markers: Okabe-Ito colours (told apart with the common colour-vision deficiencies) and a shape
# of its own for each class, so no two classes rest on colour alone; filled for drop classes, hollow for the rest
MARKERS = {C.RING_EXHAUSTION: ("#D55E00", "triangle", True), C.CPU_AND_DROPS: ("#CC79A7", "diamond", True),
           C.RING_SUSPECT: ("#E69F00", "triangle-down", True), C.UPLINK_LOSS: ("#0072B2", "square", True),
           C.DROPS_NOT_RING: ("#000000", "cross", True), C.CPU_LIMIT: ("#CC79A7", "square", False),
           C.CPU_CONTENTION: ("#56B4E9", "diamond", False), C.EMULATED_NIC: ("#0072B2", "triangle", False),
           C.NO_DATA: ("#999999", "circle", False), C.HEALTHY: ("#009E73", "circle", True)}
if set(CLASS_COLOURS) != set(FleetClass) or set(MARKERS) != set(FleetClass):  # a new class fails at import
    raise ImportError("a fleet class without its colour or marker")
SHAPES = {  # each within 3.7 px of its centre: a point at the axis' end stays inside the axes
    "circle": "M 0 -3.5 A 3.5 3.5 0 1 1 0 3.5 A 3.5 3.5 0 1 1 0 -3.5 Z", "square": "M -3 -3 H 3 V 3 H -3 Z",
    "triangle": "M 0 -3.7 L 3.6 3 H -3.6 Z", "triangle-down": "M 0 3.7 L 3.6 -3 H -3.6 Z",
    "diamond": "M 0 -3.7 L 3.7 0 L 0 3.7 L -3.7 0 Z", "cross": "M -3.2 -3.2 L 3.2 3.2 M -3.2 3.2 L 3.2 -3.2"}


def marker(fleet_class: str) -> Markup:
    """One class's scatter marker (and legend swatch) as an SVG path centred on 0,0."""
    colour, shape, filled = MARKERS[FleetClass(fleet_class)]
    paint = (f'fill="{colour}" fill-opacity="0.8" stroke="{colour}"' if filled and shape != "cross"
             else f'fill="none" stroke="{colour}" stroke-width="1.6"')
    return Markup(f'<path d="{SHAPES[shape]}" {paint}/>')


WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 760, 360, 60, 40, 20, 20
PAGE_SIZE = 100  # rows the table shows at once
TOP_ROWS = 25  # server-rendered (and printed) top suspects
ROLLUP_ROWS = 50  # cluster/host rollup rows shown; the rest folded
PLOT_LIMIT = 2000  # the most urgent VMs drawn in the scatter
BOUND_MARKS = {"upper": "\u2264 ", "lower": "\u2265 "}
COLUMNS = ("rank", "severity", "class", "confirmed", "name", "moid", "vcenter", "host", "cluster", "drops_per_s",
           "drops_per_1000", "ready_worst_pct", "ready_bound", "costop_worst_pct", "max_limited_worst_pct", "score",
           "reason", "notes", "source", "samples", "deep", "deep_href", "vm_href")
_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _href(path) -> str:
    return quote(str(path).replace("\\", "/"), safe="/")  # percent-encoded: never a URL scheme


def scatter(document: dict) -> dict:
    """Plot coordinates (numbers only: names reach the SVG through autoescaped <title>s).

    x: worst-vCPU %RDY, linear; y: receive drops per second on a log scale (log10(1 + drops/s)).
    The PLOT_LIMIT most urgent VMs with both figures are drawn; the others are counted."""
    t = document["thresholds"]
    measured = [r for r in document["vms"] if r["ready_worst_pct"] is not None and r["drops_per_s"] is not None]
    rows = measured[:PLOT_LIMIT]  # the document is ranked
    x_step, x_max = _linear_axis(max([r["ready_worst_pct"] for r in rows] + [t["cpu.ready_pct_critical"] * 1.5]))
    y_ticks = _log_ticks(max([r["drops_per_s"] for r in rows] + [t["ring.drops_per_s_critical"] * 1.5]))
    y_max = math.log10(1 + y_ticks[-1])  # the axis ends on a labelled tick at or above every point
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return round(LEFT + v / x_max * plot_w, 1)

    def y(v: float) -> float:
        return round(TOP + plot_h - math.log10(1 + v) / y_max * plot_h, 1)

    order = sorted(rows, key=lambda r: -FLEET_CLASSES.index(r["class"]))  # urgent classes drawn last, on top
    return {
        "width": WIDTH, "height": HEIGHT, "left": LEFT, "top": TOP, "bottom": HEIGHT - BOTTOM, "right": WIDTH - RIGHT,
        "points": [{"x": x(r["ready_worst_pct"]), "y": y(r["drops_per_s"]), "colour": CLASS_COLOURS[r["class"]],
                    "row": r} for r in order],
        "x_ticks": [{"x": x(i * x_step), "label": f"{i * x_step:g}"} for i in range(round(x_max / x_step) + 1)],
        "y_ticks": [{"y": y(v), "label": f"{v:,g}"} for v in y_ticks],
        # the two labels on two lines: their thresholds are close on a wide %RDY axis
        "ready_lines": [{"x": x(t["cpu.ready_pct_warning"]), "label": f"{t['cpu.ready_pct_warning']:g}%", "dy": 10},
                        {"x": x(t["cpu.ready_pct_critical"]), "label": f"{t['cpu.ready_pct_critical']:g}%", "dy": 24}],
        "drop_line": {"y": y(t["ring.drops_per_s_critical"]), "label": f"{t['ring.drops_per_s_critical']:g}/s"},
        "not_drawn": len(document["vms"]) - len(rows), "limit": PLOT_LIMIT,
    }


def _linear_axis(top: float) -> tuple[float, float]:
    """(tick step, axis end): a 1-2-5 step, at most 8 steps, the end the first tick past ``top`` (a point
    at ``top`` is inside the axes, not on their edge)."""
    step = 10 ** math.floor(math.log10(top / 5)) if top > 0 else 1
    for mult in (1, 2, 5, 10):
        if top / (step * mult) <= 8:
            step *= mult
            break
    return step, (math.floor(top / step) + 1) * step


def _log_ticks(top: float) -> list[float]:
    """Ticks of the log(1 + drops/s) axis up to the first one at or above ``top``: 0, 1, 2, 5, 10, 20, 50 ...
    while they fit three decades, decades beyond (labels stay apart)."""
    ticks, decade = [0.0], 1.0
    while ticks[-1] < top:
        ticks += [decade * m for m in (1, 2, 5)] if top <= 1000 else [decade]
        decade *= 10
    return [v for i, v in enumerate(ticks) if i == 0 or ticks[i - 1] < top]


def _cells(row: dict, vm_href=None) -> list:
    deep = row.get("deep") or {}
    extra = {"deep": (", ".join(deep.get("verdicts") or ()) or "no verdict") + (f" ({deep['error']})"
                                                                              if deep.get("error") else "")
             if deep else None, "deep_href": _href(deep["report"]) if deep.get("report") else None,
             "vm_href": vm_href(row) if vm_href else None}
    return [extra[c] if c in extra else row.get(c) for c in COLUMNS]


def page_data(document: dict, vm_href=None) -> Markup:
    """Every VM's row as compact JSON, safe inside a <script> element (no <, > or & in the text)."""
    blob = {"columns": COLUMNS, "rows": [_cells(r, vm_href) for r in document["vms"]], "page_size": PAGE_SIZE,
            "colours": CLASS_COLOURS, "classes": FLEET_CLASSES, "severities": SEVERITIES,
            "icons": {**html.SEVERITY_ICONS, "none": "\u25cb"}}
    return Markup(json.dumps(blob, separators=(",", ":"), ensure_ascii=False).translate(_JSON_ESCAPES))


def _script() -> tuple[Markup, str]:
    text = importlib.resources.files("esxdiag.templates").joinpath("fleet.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return Markup(text), f"sha256-{digest}"


def render_fleet_html(document: dict, vm_href=None) -> str:
    """vm_href(row) -> the URL of a VM's own page, when there is one (esxdiag serve)."""
    env = html.environment()  # the per-VM report's filters: its severity badge (icon + word + colour) is ours
    env.filters["fmt"] = _fmt
    env.filters["href"] = _href
    concern = [r for r in document["vms"] if needs_attention(r["class"], r["severity"])]
    severities = [(s, sum(r["severity"] == s for r in document["vms"])) for s in (*SEVERITIES, None)]
    script, script_hash = _script()
    return env.get_template("fleet.html.j2").render(
        doc=document, classes=FLEET_CLASSES, top=concern[:TOP_ROWS], concern=len(concern), colours=CLASS_COLOURS,
        plot=scatter(document), severity_counts=severities, rollup_rows=ROLLUP_ROWS, bound_marks=BOUND_MARKS,
        data=page_data(document, vm_href), script=script, script_hash=script_hash,
        headline=headline(document), calm=calm_line(document), vm_href=vm_href, marker=marker)
