"""A fleet snapshot -> the fleet report document (JSON is canonical; every other output renders it).

Ranking: severity (esxdiag.vocabulary.SEVERITIES, none last), then the score: frames lost per second
(esxdiag.fleet.rules.frames_lost_per_s), then confirmed by the deep check's host counters before
suspected from vCenter's, then class (most urgent first, esxdiag.vocabulary.FLEET_CLASSES), then
name: a critical CPU limit outranks a warning-level drop suspicion.
Rollups per cluster and per host add the host context vCenter gave: host CPU usage and pNIC
receive drops and errors over the same window; a host whose uplink loses frames says so once, in its
rollup (``uplink``), and its VMs carry it (esxdiag.fleet.uplink). Layout: docs/fleet-scan.md.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

from esxdiag import __version__
from esxdiag.fleet.rules import Assessment, assess
from esxdiag.fleet.snapshot import FleetHost, Snapshot
from esxdiag.fleet.uplink import HostUplink, host_uplink
from esxdiag.result import worst_of
from esxdiag.vocabulary import (DROP_CLASSES, FLEET_CLASSES, SCHEMA_FLEET_REPORT, FleetClass, class_rank,
                                 needs_attention, severity_order)

THRESHOLD_KEYS = ("cpu.ready_pct_warning", "cpu.ready_pct_critical", "cpu.costop_pct", "cpu.max_limited_pct",
                  "ring.drops", "ring.drops_per_s_critical", "fleet.drops_per_s_floor",
                  "fleet.drops_per_1000_floor", "fleet.uplink_drops_per_s_floor")


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def vm_row(rank: int, a: Assessment, t: dict[str, float]) -> dict:
    vm = a.vm
    return {
        "rank": rank, "vcenter": vm.vcenter, "moid": vm.moid, "name": vm.name, "class": a.klass,
        "severity": a.severity, "reason": a.reason, "score": a.score, "score_terms": a.score_terms,
        "power_state": vm.power_state, "host": vm.host, "cluster": vm.cluster, "datacenter": vm.datacenter,
        "num_cpu": vm.num_cpu, "cpu_limit_mhz": vm.cpu_allocation.limit_mhz,
        "latency_sensitivity": vm.latency_sensitivity, "num_vnics": vm.num_vnics,
        "nic_types": sorted({n.type for n in vm.vnics}) if vm.vnics is not None else None,
        "guest_ip": vm.guest.ip_address, "tools_status": vm.guest.tools_status, "source": a.source, "samples": a.samples, "drops": a.drops,
        "drops_per_s": _r(a.drops_per_s, 3), "drops_per_1000": _r(a.drops_per_1000, 3), "packets_rx": a.packets_rx,
        "ready_worst_pct": _r(a.ready_worst), "ready_worst_vcpu": a.ready_vcpu, "ready_bound": a.ready_bound,
        "ready_avg_pct": _r(a.ready_avg),
        "costop_worst_pct": _r(a.costop_worst), "max_limited_worst_pct": _r(a.max_limited_worst),
        "drops_by_vnic": a.drops_by_vnic, "notes": list(a.notes), "confirmed": a.confirmed, "dropping": a.dropping,
        "moves": [m.as_dict() for m in a.moves] if a.moves is not None else None,
        "uplink_loss": [_loss(u.host, v) for u in a.uplinks for v in u.lossy(t)],
        "deep": None,
    }


def _loss(host: str, v) -> dict:
    """One uplink losing frames over the floor (esxdiag.fleet.uplink.VmnicLoss) as JSON."""
    return {"host": host, "vmnic": v.vmnic, "per_s": _r(v.per_s, 3), "drops_per_s": _r(v.drops / v.seconds, 3),
            "errors_per_s": None if v.errors is None else _r(v.errors / v.seconds, 3)}


def order_key(severity: str | None, confirmed: bool, klass: str, score: float, name: str, key: str) -> tuple:
    """Severity, then the score (frames lost per second: esxdiag.fleet.rules.frames_lost_per_s), then confirmed
    by host counters before suspected from vCenter's, then class: within a severity the score never rises."""
    return severity_order(severity), -score, not confirmed, class_rank(klass), name, key


def rank(assessments: list[Assessment]) -> list[Assessment]:
    return sorted(assessments, key=lambda a: order_key(a.severity, a.confirmed, a.klass, a.score, a.vm.name, a.vm.key))


def row_order(row: dict) -> tuple:
    """The same order for a report's rows (esxdiag serve merges several reports' rows)."""
    return order_key(row["severity"], row["confirmed"], row["class"], row["score"], row["name"],
                     f"{row['vcenter']}/{row['moid']}")


def rollup_order(group: dict) -> tuple:
    """Groups with the most VMs needing attention (a host's own uplink loss counts as one) first, then by the
    host's uplink loss rate, then by the VMs' drops."""
    return (-group["concern"], -(group.get("uplink_loss_per_s") or 0), -(group["drops_per_s"] or 0),
            group["vcenter"], group["name"] or "")


NO_HOST_CONTEXT: dict[str, Any] = {"cpu_usage_avg_pct": None, "pnic_drops_per_s": None, "pnic_errors_per_s": None, "uplink_loss": [],
                   "uplink": None, "uplink_loss_per_s": None, "source": None, "error": None}


def host_context(host: FleetHost, t: dict[str, float]) -> dict:
    """Host CPU usage (cpu.usage.average, hundredths of a percent), pNIC receive drops and errors per
    second, and the uplink loss over the floor, stated once (esxdiag.fleet.uplink)."""
    out = dict(NO_HOST_CONTEXT, uplink_loss=[], error=host.perf_error)
    perf = host.perf
    if perf is None:
        return out
    out["source"] = f"vcenter-{perf.rollup}"
    usage = [v for s in perf.series if s.counter == "cpu.usage.average" and s.instance == "" for v in s.values
             if v is not None]
    if usage:
        out["cpu_usage_avg_pct"] = round(sum(usage) / len(usage) / 100, 2)
    for counter, key in (("net.droppedRx.summation", "pnic_drops_per_s"), ("net.errorsRx.summation",
                                                                          "pnic_errors_per_s")):
        series = [s for s in perf.series if s.counter == counter]
        chosen = [s for s in series if s.instance] or series  # per pNIC when expanded, else the aggregate
        values = [v for s in chosen for v in s.values if v is not None]
        samples = max((sum(v is not None for v in s.values) for s in chosen), default=0)
        if values and samples:
            out[key] = round(sum(values) / (samples * perf.interval_s), 3)
    figures = host_uplink(host)
    if figures is not None and figures.lossy(t):
        out["uplink_loss"] = [_loss(host.name, v) for v in figures.lossy(t)]
        out["uplink_loss_per_s"] = round(figures.per_s(t), 3)
        out["uplink"] = (f"{figures.words(t)}: before the vSwitch, not the ring: one finding for the host, not "
                         "one per VM on it")
    return out


def event_notes(snapshot: Snapshot) -> list[str]:
    """What the report cannot say about moves: a vCenter whose migration events could not be read, or
    whose answer was cut at the most one query returns."""
    notes = []
    for v in snapshot.vcenters:
        if v.status == "scanned" and v.migration_events_error:
            notes.append(f"{v.name}: migration events not read ({v.migration_events_error}): a VM that moved "
                         "between hosts in the window is not marked")
        elif v.status == "scanned" and v.migration_events_truncated:
            notes.append(f"{v.name}: {v.migration_events} migration events, the most one query returns: older "
                         "moves in the window may be missing")
    return notes


def _rollup(rows: list[dict], key) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    out = []
    for k, members in groups.items():
        ready = [m["ready_worst_pct"] for m in members if m["ready_worst_pct"] is not None]
        drops = [m["drops_per_s"] for m in members if m["drops_per_s"] is not None]
        counts = {c: sum(m["class"] == c for m in members) for c in FLEET_CLASSES}
        out.append({"vcenter": k[0], "name": k[1], "vms": len(members), "counts": counts,
                    "drops_per_s": round(sum(drops), 3) if drops else None,
                    "ready_worst_pct": max(ready) if ready else None,
                    "concern": sum(needs_attention(m) for m in members)})
    return sorted(out, key=rollup_order)


def host_rollups(rows: list[dict], context: dict[tuple[str, str], dict]) -> list[dict]:
    """The per-host rollups of ``rows``, each with its host's context (host_context) by (vCenter, name)."""
    hosts = _rollup(rows, lambda r: (r["vcenter"], r["host"] or "(unknown host)"))
    for h in hosts:
        h.update(context.get((h["vcenter"], h["name"]), NO_HOST_CONTEXT))
        h["concern"] += 1 if h["uplink"] else 0  # the host's own finding, once
    return sorted(hosts, key=rollup_order)


def build_report(snapshot: Snapshot, thresholds: dict[str, float], snapshot_file: str | None = None,
                 deep: dict[tuple[str, str], dict] | None = None) -> dict:
    """deep: each deep-checked VM's check by (vcenter, moid) (esxdiag.fleet.deep): folded into its class."""
    deep = deep or {}
    uplinks: dict[tuple[str, str], HostUplink] = {}
    for h in snapshot.hosts:
        if (figures := host_uplink(h)) is not None:
            uplinks[(h.vcenter, h.name)] = figures
    ranked = rank([assess(vm, thresholds, deep.get((vm.vcenter, vm.moid)), uplinks) for vm in snapshot.vms])
    rows = [vm_row(i, a, thresholds) for i, a in enumerate(ranked, 1)]
    for row in rows:
        row["deep"] = deep.get((row["vcenter"], row["moid"]))
    hosts = host_rollups(rows, {(h.vcenter, h.name): host_context(h, thresholds) for h in snapshot.hosts})
    return {
        "schema": SCHEMA_FLEET_REPORT, "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "esxdiag_version": __version__,
        "snapshot": {"file": snapshot_file, "collected_at": snapshot.collected_at, "window_s": snapshot.window_s,
                     "nic_types": snapshot.nic_types, "filters": snapshot.filters, "notes": list(snapshot.notes) + event_notes(snapshot)},
        "thresholds": {k: thresholds[k] for k in THRESHOLD_KEYS},
        "vcenters": [dict(v.__dict__) for v in snapshot.vcenters],
        "not_scanned": [{"vcenter": v.name, "url": v.url, "error": v.error, "error_kind": v.error_kind}
                        for v in snapshot.failed],
        "counts": {c: sum(r["class"] == c for r in rows) for c in FLEET_CLASSES},
        "vms": rows,
        "rollups": {"clusters": _rollup(rows, lambda r: (r["vcenter"], r["cluster"] or "(no cluster)")),
                    "hosts": hosts},
        "changes": None,
        "deep": None,
    }


def with_rows(document: dict, rows: list[dict]) -> dict:
    """A new document with ``rows`` in place of the document's own (which is left as it was): ranked
    again, its counts and rollups recomputed, each host's context kept from the document's rollups."""
    rows = [dict(row, rank=i) for i, row in enumerate(sorted(rows, key=row_order), 1)]
    context = {(h["vcenter"], h["name"]): {k: h[k] for k in NO_HOST_CONTEXT} for h in document["rollups"]["hosts"]}
    hosts = host_rollups(rows, context)
    return dict(document, vms=rows, counts={c: sum(r["class"] == c for r in rows) for c in FLEET_CLASSES},
                rollups={"clusters": _rollup(rows, lambda r: (r["vcenter"], r["cluster"] or "(no cluster)")),
                         "hosts": hosts})


def worst_severity(document: dict) -> str | None:
    deep = (document.get("deep") or {}).get("vms", [])
    return worst_of([r["severity"] for r in document["vms"]] + [d.get("worst_severity") for d in deep])


def deep_candidates(document: dict, n: int) -> list[dict]:
    """The N VMs a deep check helps most: drop suspicions on a vmxnet3 vNIC (cpu-and-drops, ring-suspect,
    and drops that vCenter's counters cannot place), most severe first, then by score. Not a VM that
    moved between hosts in the window (its counters span two ports; the check samples one host, after
    the window), nor an uplink-loss VM (no ring can help frames lost before the vSwitch)."""
    rows = [r for r in document["vms"] if not r.get("moves") and (r["class"] in DROP_CLASSES
            or r["class"] == FleetClass.NO_DATA and r["dropping"] and "vmxnet3" in (r["nic_types"] or ()))]
    return sorted(rows, key=lambda r: (severity_order(r["severity"]), -r["score"], r["rank"]))[:max(0, n)]


def tripped(document: dict, severity: str) -> list[dict]:
    """The rows whose severity (or deep check's worst finding) is `severity` or worse (--fail-on)."""
    limit = severity_order(severity)
    return [r for r in document["vms"] if severity_order(r["severity"]) <= limit
            or severity_order((r.get("deep") or {}).get("worst_severity")) <= limit]
