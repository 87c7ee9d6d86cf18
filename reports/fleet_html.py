"""The fleet report as one offline HTML file: counts per class first, top suspects, the scatter of
drop rate against worst-vCPU %RDY (inline SVG), a table per class (pre-sorted by score: no script),
rollups per cluster and host, changes since the previous scan, deep checks. Autoescaped throughout."""

from __future__ import annotations

import math
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined

from esxdiag.reports.fleet_text import calm_line, headline
from esxdiag.vocabulary import FLEET_CLASSES

CLASS_COLOURS = {"cpu-and-drops": "#7b2fa3", "ring-suspect": "#b00020", "cpu-limit": "#c05800",
                 "cpu-contention": "#8a5300", "emulated-nic": "#0b5cad", "no-data": "#888888", "healthy": "#1e6b35"}
WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 760, 360, 60, 40, 20, 20


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def scatter(document: dict) -> dict:
    """Plot coordinates (numbers only: names reach the SVG through autoescaped <title>s).

    x: worst-vCPU %RDY, linear; y: receive drops per second on a log scale (log10(1 + drops/s)).
    VMs without both figures are counted, not drawn."""
    t = document["thresholds"]
    rows = [r for r in document["vms"] if r["ready_worst_pct"] is not None and r["drops_per_s"] is not None]
    x_max = max([r["ready_worst_pct"] for r in rows] + [t["cpu.ready_pct_critical"] * 1.5])
    y_max = max([math.log10(1 + r["drops_per_s"]) for r in rows] + [math.log10(1 + t["ring.drops_per_s_critical"]) * 1.5])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return round(LEFT + v / x_max * plot_w, 1)

    def y(v: float) -> float:
        return round(TOP + plot_h - math.log10(1 + v) / y_max * plot_h, 1)

    order = sorted(rows, key=lambda r: -FLEET_CLASSES.index(r["class"]))  # urgent classes drawn last, on top
    ticks = [0, 1, 10, 100, 1000, 10000, 100000]
    return {
        "width": WIDTH, "height": HEIGHT, "left": LEFT, "top": TOP, "bottom": HEIGHT - BOTTOM, "right": WIDTH - RIGHT,
        "points": [{"x": x(r["ready_worst_pct"]), "y": y(r["drops_per_s"]), "colour": CLASS_COLOURS[r["class"]],
                    "row": r} for r in order],
        "x_ticks": [{"x": x(v), "label": f"{v:g}"} for v in _linear_ticks(x_max)],
        "y_ticks": [{"y": y(v), "label": f"{v:g}"} for v in ticks if math.log10(1 + v) <= y_max],
        "ready_lines": [{"x": x(t["cpu.ready_pct_warning"]), "label": f"{t['cpu.ready_pct_warning']:g}%"},
                        {"x": x(t["cpu.ready_pct_critical"]), "label": f"{t['cpu.ready_pct_critical']:g}%"}],
        "drop_line": {"y": y(t["ring.drops_per_s_critical"]), "label": f"{t['ring.drops_per_s_critical']:g}/s"},
        "not_drawn": len(document["vms"]) - len(rows),
    }


def _linear_ticks(top: float) -> list[float]:
    step = 10 ** math.floor(math.log10(top / 5)) if top > 0 else 1
    for mult in (1, 2, 5, 10):
        if top / (step * mult) <= 8:
            step *= mult
            break
    return [i * step for i in range(int(top // step) + 1)]


def render_fleet_html(document: dict, vm_href=None) -> str:
    """vm_href(row) -> the URL of a VM's own page, when there is one (esxdiag serve)."""
    env = Environment(loader=PackageLoader("esxdiag.templates", "."), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = _fmt
    env.filters["href"] = lambda path: quote(str(path).replace("\\", "/"), safe="/")  # never a URL scheme
    by_class = {c: [r for r in document["vms"] if r["class"] == c] for c in FLEET_CLASSES}
    concern = [r for r in document["vms"] if r["class"] not in ("healthy", "no-data")]
    return env.get_template("fleet.html.j2").render(
        doc=document, classes=FLEET_CLASSES, by_class=by_class, top=concern[:25], concern=len(concern),
        colours=CLASS_COLOURS, plot=scatter(document), headline=headline(document), calm=calm_line(document),
        vm_href=vm_href)
