"""A VM's past fleet-scan results as one HTML page: its class, drops and worst-vCPU %RDY over past
scans (inline SVG line charts, esxdiag.reports.charts), the results table, and, from `esxdiag serve`,
its current row and its last deep check. `esxdiag history VM --format html` writes the same page
from the history alone. Autoescaped; the charts escape their own text."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from esxdiag.reports.charts import line_chart
from esxdiag.reports.fleet_html import CLASS_COLOURS
from esxdiag.result import Series

TABLE_ROWS = 100  # newest results listed; the charts show every row given


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}" if isinstance(value, float) else str(value)


def _series(rows: list[dict], key: str, unit: str) -> list[Series]:
    """One line per VM (vCenter + MOID): a name can match VMs of several vCenters."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in reversed(rows):  # rows are newest first; a chart runs oldest to newest
        groups.setdefault((row["vcenter"], row["moid"]), []).append(row)
    return [Series(f"{group[-1]['name']} ({moid} @ {vcenter})", unit, tuple(r["collected_at"] for r in group),
                   tuple(r[key] for r in group)) for (vcenter, moid), group in groups.items()]


def render_history_html(history: dict) -> str:
    """history: {"vm", "rows" (esxdiag.fleet.history.vm_history rows, newest first)} and, optionally,
    "current" (the VM's fleet report row), "stale" (why its figures are old), "deep" (its last deep
    check: verdicts, vnics, checked_at, href, error), "thresholds" (the fleet report's), "fleet_href"."""
    rows, t = history["rows"], history.get("thresholds") or {}
    ready_lines = [(name, t[key]) for name, key in (("warning", "cpu.ready_pct_warning"),
                                                    ("critical", "cpu.ready_pct_critical")) if key in t]
    drop_lines = [("critical", t["ring.drops_per_s_critical"])] if "ring.drops_per_s_critical" in t else []
    charts = [Markup(line_chart(_series(rows, "drops_per_s", "drops/s"), "Receive drops per second (vCenter)",
                                "drops/s", drop_lines)),
              Markup(line_chart(_series(rows, "ready_worst_pct", "%"), "Worst-vCPU %RDY", "%", ready_lines))]
    env = Environment(loader=PackageLoader("esxdiag.templates", "."), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = _fmt
    return env.get_template("history.html.j2").render(
        vm=history["vm"], rows=rows[:TABLE_ROWS], more=max(0, len(rows) - TABLE_ROWS), total=len(rows),
        charts=charts, colours=CLASS_COLOURS, current=history.get("current"), stale=history.get("stale"),
        deep=history.get("deep"), fleet_href=history.get("fleet_href"))
