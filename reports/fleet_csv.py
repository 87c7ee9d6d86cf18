"""The ranked VM list as CSV for spreadsheets: one row per VM, the numbers behind its class."""

from __future__ import annotations

import csv
import io

COLUMNS = ("rank", "class", "severity", "confirmed", "score", "name", "moid", "vcenter", "datacenter", "cluster", "host",
           "power_state", "num_cpu", "cpu_limit_mhz", "num_vnics", "nic_types", "tools_status", "source", "samples", "drops", "drops_per_s",
           "drops_per_1000", "packets_rx", "ready_worst_pct", "ready_worst_vcpu", "ready_bound", "ready_avg_pct",
           "costop_worst_pct", "max_limited_worst_pct", "deep_verdicts", "reason")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value) -> str:
    """Lists joined; text that a spreadsheet would run as a formula is quoted with a leading '."""
    if value is None:
        return ""
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return str(value)


def render_fleet_csv(document: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in document["vms"]:
        deep = row.get("deep") or {}
        values = {**row, "nic_types": row["nic_types"], "deep_verdicts": deep.get("verdicts")}
        writer.writerow([_cell(values.get(c)) for c in COLUMNS])
    return out.getvalue()
