"""A fleet snapshot -> the fleet report document (JSON is canonical; every other output renders it).

Ranking: severity (esxdiag.result.SEVERITIES, none last), then confirmed by the deep check's host
counters before suspected from vCenter's, then class (most urgent first,
esxdiag.vocabulary.FLEET_CLASSES), then score, then name: a critical CPU limit outranks a
warning-level drop suspicion.
Rollups per cluster and per host add the host context vCenter gave: host CPU usage and pNIC
receive drops over the same window. Layout: docs/fleet-scan.md.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone

from esxdiag import __version__
from esxdiag.fleet.rules import Assessment, assess
from esxdiag.fleet.snapshot import FleetHost, Snapshot
from esxdiag.result import SEVERITIES, worst_of
from esxdiag.vocabulary import CONCERN_CLASSES, DROP_CLASSES, FLEET_CLASSES, SCHEMA_FLEET_REPORT

THRESHOLD_KEYS = ("cpu.ready_pct_warning", "cpu.ready_pct_critical", "cpu.costop_pct", "cpu.max_limited_pct",
                  "ring.drops", "ring.drops_per_s_critical", "fleet.score_drops_weight", "fleet.drops_per_s_floor",
                  "fleet.drops_per_1000_floor")


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def vm_row(rank: int, a: Assessment) -> dict:
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
        "deep": None,
    }


def severity_order(severity: str | None) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def order_key(severity: str | None, confirmed: bool, klass: str, score: float, name: str, key: str) -> tuple:
    """Severity, then confirmed by host counters before suspected from vCenter's, then class, then score."""
    return severity_order(severity), not confirmed, FLEET_CLASSES.index(klass), -score, name, key


def rank(assessments: list[Assessment]) -> list[Assessment]:
    return sorted(assessments, key=lambda a: order_key(a.severity, a.confirmed, a.klass, a.score, a.vm.name, a.vm.key))


def row_order(row: dict) -> tuple:
    """The same order for a report's rows (esxdiag serve merges several reports' rows)."""
    return order_key(row["severity"], row["confirmed"], row["class"], row["score"], row["name"],
                     f"{row['vcenter']}/{row['moid']}")


def host_context(host: FleetHost) -> dict:
    """Host CPU usage (cpu.usage.average, hundredths of a percent) and pNIC receive drops per second."""
    out = {"cpu_usage_avg_pct": None, "pnic_drops_per_s": None, "source": None, "error": host.perf_error}
    perf = host.perf
    if perf is None:
        return out
    out["source"] = f"vcenter-{perf.rollup}"
    usage = [v for s in perf.series if s.counter == "cpu.usage.average" and s.instance == "" for v in s.values
             if v is not None]
    if usage:
        out["cpu_usage_avg_pct"] = round(sum(usage) / len(usage) / 100, 2)
    drops = [s for s in perf.series if s.counter == "net.droppedRx.summation"]
    chosen = [s for s in drops if s.instance] or drops  # per pNIC when expanded, else the aggregate
    values = [v for s in chosen for v in s.values if v is not None]
    samples = max((sum(v is not None for v in s.values) for s in chosen), default=0)
    if values and samples:
        out["pnic_drops_per_s"] = round(sum(values) / (samples * perf.interval_s), 3)
    return out


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
                    "concern": sum(counts[c] for c in CONCERN_CLASSES)})
    return sorted(out, key=lambda r: (-r["concern"], -(r["drops_per_s"] or 0), r["vcenter"], r["name"] or ""))


def build_report(snapshot: Snapshot, thresholds: dict[str, float], snapshot_file: str | None = None,
                 deep: dict[tuple[str, str], dict] | None = None) -> dict:
    """deep: each deep-checked VM's check by (vcenter, moid) (esxdiag.fleet.deep): folded into its class."""
    deep = deep or {}
    ranked = rank([assess(vm, thresholds, deep.get((vm.vcenter, vm.moid))) for vm in snapshot.vms])
    rows = [vm_row(i, a) for i, a in enumerate(ranked, 1)]
    for row in rows:
        row["deep"] = deep.get((row["vcenter"], row["moid"]))
    hosts = _rollup(rows, lambda r: (r["vcenter"], r["host"] or "(unknown host)"))
    context = {(h.vcenter, h.name): host_context(h) for h in snapshot.hosts}
    for h in hosts:
        h.update(context.get((h["vcenter"], h["name"]), {"cpu_usage_avg_pct": None, "pnic_drops_per_s": None,
                                                         "source": None, "error": None}))
    return {
        "schema": SCHEMA_FLEET_REPORT, "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "esxdiag_version": __version__,
        "snapshot": {"file": snapshot_file, "collected_at": snapshot.collected_at, "window_s": snapshot.window_s,
                     "nic_types": snapshot.nic_types, "filters": snapshot.filters, "notes": list(snapshot.notes)},
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


def worst_severity(document: dict) -> str | None:
    deep = (document.get("deep") or {}).get("vms", [])
    return worst_of([r["severity"] for r in document["vms"]] + [d.get("worst_severity") for d in deep])


def deep_candidates(document: dict, n: int) -> list[dict]:
    """The N VMs a deep check helps most: drop suspicions on a vmxnet3 vNIC (cpu-and-drops, ring-suspect,
    and drops that vCenter's counters cannot place), most severe first, then by score."""
    rows = [r for r in document["vms"] if r["class"] in DROP_CLASSES
            or r["class"] == "no-data" and r["dropping"] and "vmxnet3" in (r["nic_types"] or ())]
    return sorted(rows, key=lambda r: (severity_order(r["severity"]), -r["score"], r["rank"]))[:max(0, n)]


def tripped(document: dict, severity: str) -> list[dict]:
    """The rows whose severity (or deep check's worst finding) is `severity` or worse (--fail-on)."""
    limit = severity_order(severity)
    return [r for r in document["vms"] if severity_order(r["severity"]) <= limit
            or severity_order((r.get("deep") or {}).get("worst_severity")) <= limit]
