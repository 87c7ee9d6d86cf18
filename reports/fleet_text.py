"""Terminal summary of a fleet scan: counts per class, what was not scanned, the top N table,
changes since the previous scan and the deep checks. Untrusted names go through safe_text."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

from esxdiag.vocabulary import FLEET_CLASSES, FleetClass, needs_attention
from esxdiag.terminal import safe_text
from esxdiag.reports.words import count

COLUMNS = (("#", 3), ("severity", 8), ("class", 15), ("VM", 24), ("vCenter", 18), ("host", 16), ("drops/s", 9),
           ("/1k pkts", 9), ("%RDY max", 8), ("%CSTP", 6), ("%MLMTD", 7), ("score", 7))
# the columns a narrow terminal keeps first; the table keeps COLUMNS' order
PRIORITY = ("#", "severity", "class", "VM", "drops/s", "%RDY max", "/1k pkts", "%MLMTD", "host", "%CSTP", "vCenter",
            "score")
VM_MIN, VM_MAX = 16, 40
CUT = ("VM", "vCenter", "host")  # names are cut to their column with ~; figures and classes never
MIN_WIDTH = 60


def fit_columns(width: int) -> list[tuple[str, int]]:
    """The columns that fit ``width`` (a space between each), by PRIORITY; the VM column takes what is left."""
    widths = dict(COLUMNS)
    widths["VM"] = VM_MIN
    chosen: list[str] = []
    used = -1
    for name in PRIORITY:
        if used + 1 + widths[name] <= width:
            chosen.append(name)
            used += 1 + widths[name]
    widths["VM"] = min(VM_MAX, VM_MIN + width - used)
    return [(name, widths[name]) for name, _ in COLUMNS if name in chosen]


def joined_lines(items: list[str], width: int, sep: str = " | ", indent: str = "  ") -> list[str]:
    """Items joined by ``sep``, a new line (never inside an item) when the next would pass ``width``."""
    lines = [indent]
    for item in items:
        if lines[-1].strip() and len(lines[-1]) + len(sep) + len(item) > width:
            lines.append(indent)
        lines[-1] += (sep if lines[-1].strip() else "") + item
    return lines


def terminal_width() -> int | None:
    """This terminal's columns (COLUMNS when set); None when the output is not a terminal (a file or a pipe
    keeps whole lines, for grep)."""
    if os.environ.get("COLUMNS", "").isdigit() or sys.stdout.isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size((100, 24)).columns)
    return None


def _num(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cut(text: str, width: int) -> str:
    text = safe_text(text)
    return text if len(text) <= width else text[: width - 1] + "~"


def headline(document: dict) -> str | None:
    """What must be read first when the scan did not see the fleet: the vCenters not scanned (with
    why), or that no VM was scanned at all. None when every vCenter was scanned and held VMs."""
    missing, total = document["not_scanned"], len(document["vcenters"])
    if missing:
        why = "; ".join(safe_text(m["error"] or f"{m['vcenter']}: {m['error_kind'] or 'not scanned'}") for m in missing)
        return f"{len(missing)} of {total} vCenters not scanned: {why}"
    if not document["vms"]:
        return f"0 VMs scanned in {total} vCenter{'' if total == 1 else 's'}: nothing was assessed"
    return None


def calm_line(document: dict) -> str:
    """Said when no VM scanned needs attention: "No VM needs attention" only when the whole fleet
    asked for was scanned and held VMs."""
    vms, missing = len(document["vms"]), len(document["not_scanned"])
    starting = sum(v["status"] == "starting" for v in document["vcenters"])
    if not vms:
        return "0 VMs scanned: no VM was assessed, so none can be called healthy."
    if missing:
        return (f"None of the {vms} VMs scanned needs attention in this window; the VMs of the {missing} "
                f"vCenter{'' if missing == 1 else 's'} not scanned were not assessed.")
    if starting:
        return (f"None of the {vms} VMs scanned needs attention in this window; the VMs of the {starting} "
                f"vCenter{'' if starting == 1 else 's'} whose first cycle has not finished are not assessed yet.")
    return "No VM needs attention in this window."


def _ready(row: dict) -> str:
    """%RDY, with < or > when it only bounds the per-vCPU figure (vCPU count unknown)."""
    mark = {"upper": "<=", "lower": ">="}.get(row.get("ready_bound") or "", "")
    return mark + _num(row["ready_worst_pct"])


def _cells(r: dict) -> dict[str, str]:
    return {"#": str(r["rank"]), "severity": r["severity"] or "-", "class": r["class"], "VM": r["name"],
            "vCenter": r["vcenter"], "host": r["host"] or "-", "drops/s": _num(r["drops_per_s"]),
            "/1k pkts": _num(r["drops_per_1000"]), "%RDY max": _ready(r), "%CSTP": _num(r["costop_worst_pct"]),
            "%MLMTD": _num(r["max_limited_worst_pct"]), "score": _num(r["score"], 1)}


def render_fleet_text(document: dict, top: int = 10, width: int | None = None) -> str:
    """``width``: the terminal's columns (default: this terminal's); the table keeps the columns that fit and
    every reason is wrapped under its row."""
    width = width or terminal_width()
    if width is not None:
        width = max(MIN_WIDTH, width)
    columns = fit_columns(width) if width else list(COLUMNS)
    vms = document["vms"]
    scanned = [v for v in document["vcenters"] if v["status"] == "scanned"]
    first = headline(document)
    lines = [first] if first else []
    lines.append(f"esxdiag scan: {len(vms)} VMs from {len(scanned)} of {len(document['vcenters'])} vCenter(s), "
                 f"window {document['snapshot']['window_s']:g} s, collected {document['snapshot']['collected_at']}")
    lines += joined_lines([f"{c} {document['counts'].get(c, 0)}" for c in FLEET_CLASSES], width or 10**6)
    for v in document["vcenters"]:
        if v["status"] == "starting":
            lines.append(f"  {safe_text(v['name'])}: starting, its first cycle has not finished yet")
        if v["status"] == "scanned" and v.get("migration_events_error"):
            lines.append(f"  {safe_text(v['name'])}: migration events not read "
                         f"({safe_text(v['migration_events_error'])}): VMs that moved in the window are not marked")
    concern = [r for r in vms if needs_attention(r["class"], r["severity"])]  # not the symptomless VMs of a lossy host: its rollup says it
    lines.append(f"Top {min(top, len(concern))} of {len(concern)} VMs needing attention:" if concern
                 else calm_line(document))
    if concern and top > 0:
        lines.append(" ".join(f"{name:<{w}}" for name, w in columns).rstrip())
        for r in concern[:top]:
            cells = _cells(r)
            lines.append(" ".join(f"{_cut(cells[name], w) if name in CUT else cells[name]:<{w}}"
                                  for name, w in columns).rstrip())
            lines.append(f"    {safe_text(r['reason'])}")
    lossy = sorted((h for h in document["rollups"]["hosts"] if h.get("uplink")),
                   key=lambda h: -(h.get("uplink_loss_per_s") or 0))  # the worst loss first
    if lossy:
        lines.append(f"Uplink loss on {len(lossy)} host{'' if len(lossy) == 1 else 's'} (frames lost before the "
                     "vSwitch: one finding per host, not a ring):")
        lines.extend(f"  {safe_text(h['uplink'])} ({h['counts'].get(FleetClass.UPLINK_LOSS, 0)} of its {h['vms']} VMs "
                     "classed uplink-loss, info when they drop nothing themselves)" for h in lossy[:top])
    changes = document.get("changes")
    if changes:
        lines.append(f"Since the previous scan ({changes['previous_at']}): "
                     f"{len(changes['new'])} new, {len(changes['recovered'])} recovered, "
                     f"{len(changes['changed'])} changed class")
        for label, key in (("new", "new"), ("recovered", "recovered"), ("changed", "changed")):
            for item in changes[key][:top]:
                lines.append(f"  {label:<9} {safe_text(item['name'])}: {item['before'] or '-'} -> {item['after'] or '-'}")
    deep = document.get("deep")
    if deep:
        lines.append(f"Deep checks ({count(len(deep['vms']), 'VM')} on {count(len(deep['hosts']), 'host')}):")
        for host in deep["hosts"]:
            if host["error"]:
                lines.append(f"  host {safe_text(host['host'])} not reached: {safe_text(host['error'])}")
        for vm in deep["vms"]:
            verdicts = ", ".join(vm["verdicts"]) or "no verdict"
            lines.append(f"  {safe_text(vm['name'])}: {verdicts}" + (f" ({safe_text(vm['error'])})" if vm["error"] else ""))
    return "\n".join(wrapped for line in lines for wrapped in fit(line, width)) + "\n"


def fit(line: str, width: int | None) -> list[str]:
    """A line within ``width``: wrapped under its own indent (two more for its continuation)."""
    if width is None or len(line) <= width:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [line[:width]]
