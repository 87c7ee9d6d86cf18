"""The ranked VM list as CSV for spreadsheets: one row per VM, the numbers behind its class."""

from __future__ import annotations

import csv
import io

COLUMNS = ("rank", "class", "severity", "confirmed", "score", "name", "moid", "vcenter", "datacenter", "cluster", "host",
           "power_state", "num_cpu", "cpu_limit_mhz", "num_vnics", "nic_types", "tools_status", "source", "samples", "drops", "drops_per_s",
           "drops_per_1000", "packets_rx", "ready_worst_pct", "ready_worst_vcpu", "ready_bound", "ready_avg_pct",
           "costop_worst_pct", "max_limited_worst_pct", "uplink_loss_per_s", "moved", "deep_verdicts", "reason")
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


def _moved(moves: list | None) -> str | None:
    """"esx0>esx1@2026-11-21T06:01:56Z" per move; empty when none, or the events were not read."""
    return " ".join(f"{m['from'] or '?'}>{m['to'] or '?'}@{m['time']}" for m in moves) if moves else None


def render_fleet_csv(document: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in document["vms"]:
        deep = row.get("deep") or {}
        loss = row.get("uplink_loss") or []
        values = {**row, "nic_types": row["nic_types"], "deep_verdicts": deep.get("verdicts"),
                  "uplink_loss_per_s": round(sum(u["per_s"] or 0 for u in loss), 3) if loss else None,
                  "moved": _moved(row.get("moves"))}
        writer.writerow([_cell(values.get(c)) for c in COLUMNS])
    return out.getvalue()
