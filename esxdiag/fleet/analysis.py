"""A fleet snapshot and its evidence -> the fleet report (JSON is canonical; every other output renders it).

Ranking: severity (esxdiag.vocabulary.SEVERITIES, none last), then the score: frames lost per second
(esxdiag.fleet.rules.frames_lost_per_s), then confirmed by the deep check's host counters before
suspected from vCenter's, then class (most urgent first, esxdiag.vocabulary.FLEET_CLASSES), then
name: a critical CPU limit outranks a warning-level drop suspicion.
Rollups per cluster and per host add the host context vCenter gave: host CPU usage and pNIC
receive drops and errors over the same window; a host whose uplink loses frames says so once, in its
rollup (``uplink``), and its VMs carry it (esxdiag.fleet.uplink). The report is a frozen value
(esxdiag.fleet.model), its JSON ``as_dict()``. Layout: docs/fleet-scan.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping

from esxdiag import __version__
from esxdiag.fleet.model import (DeepEvidence, DeepSection, FleetReport, FleetRow, HostContext, Key, NotScanned,
                                 SnapshotInfo, class_counts, cluster_rollups, host_rollups, order_key, ranked)
from esxdiag.fleet.rules import Assessment, assess
from esxdiag.fleet.snapshot import FleetHost, Snapshot
from esxdiag.fleet.uplink import HostUplink, VmnicLoss, host_uplink
from esxdiag.result import worst_of
from esxdiag.vocabulary import DROP_CLASSES, SCHEMA_FLEET_REPORT, FleetClass, drop_severity, severity_order

THRESHOLD_KEYS = ("cpu.ready_pct_warning", "cpu.ready_pct_critical", "cpu.costop_pct", "cpu.max_limited_pct",
                  "ring.drops", "ring.drops_per_s_critical", "fleet.drops_per_s_floor",
                  "fleet.drops_per_1000_floor", "fleet.uplink_drops_per_s_floor", "uplink.drops_per_s_critical")


def made_under(thresholds: Mapping[str, float]) -> dict[str, Any]:
    """What every fleet report (a scan's, serve's merged one) says of how it was made: its schema, when,
    by which esxdiag, and the thresholds it was judged under."""
    return {"schema": SCHEMA_FLEET_REPORT, "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "esxdiag_version": __version__, "thresholds": {k: thresholds[k] for k in THRESHOLD_KEYS}}


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class Evidence:
    """What a scan learned beyond vCenter's counters, by (vCenter, MOID): each VM's deep check (this scan's,
    esxdiag.fleet.deep, or a proof kept from an earlier one, esxdiag.scanning.proofs), this scan's deep
    check as a whole, and the notes the kept proofs add to their rows."""

    checks: Mapping[Key, DeepEvidence] = field(default_factory=dict)
    section: DeepSection | None = None
    notes: Mapping[Key, tuple[str, ...]] = field(default_factory=dict)

    @property
    def checked(self) -> frozenset[Key]:
        """The VMs this scan's deep check covered."""
        return frozenset(v.key for v in self.section.vms) if self.section is not None else frozenset()


NO_EVIDENCE = Evidence()


def vm_row(rank: int, a: Assessment, t: dict[str, float], check: DeepEvidence | None = None,
           notes: tuple[str, ...] = ()) -> FleetRow:
    vm = a.vm
    return FleetRow(
        rank=rank, vcenter=vm.vcenter, moid=vm.moid, name=vm.name, klass=a.klass, severity=a.severity, reason=a.reason,
        score=a.score, score_terms=a.score_terms, power_state=vm.power_state, host=vm.host, cluster=vm.cluster,
        datacenter=vm.datacenter, num_cpu=vm.num_cpu, cpu_limit_mhz=vm.cpu_allocation.limit_mhz,
        latency_sensitivity=vm.latency_sensitivity, num_vnics=vm.num_vnics,
        nic_types=tuple(sorted({n.type for n in vm.vnics})) if vm.vnics is not None else None,
        guest_ip=vm.guest.ip_address, tools_status=vm.guest.tools_status, source=a.source, samples=a.samples,
        drops=a.drops, drops_per_s=_r(a.drops_per_s, 3), drops_per_1000=_r(a.drops_per_1000, 3),
        packets_rx=a.packets_rx, ready_worst_pct=_r(a.ready_worst), ready_worst_vcpu=a.ready_vcpu,
        ready_bound=a.ready_bound, ready_avg_pct=_r(a.ready_avg), costop_worst_pct=_r(a.costop_worst),
        max_limited_worst_pct=_r(a.max_limited_worst), drops_by_vnic=a.drops_by_vnic, notes=(*a.notes, *notes),
        confirmed=a.confirmed, dropping=a.dropping,
        moves=tuple(m.as_dict() for m in a.moves) if a.moves is not None else None,
        uplink_loss=tuple(_loss(u.host, v) for u in a.uplinks for v in u.lossy(t)), deep=check)


def _loss(host: str, v: VmnicLoss) -> dict:
    """One uplink losing frames over the floor (esxdiag.fleet.uplink.VmnicLoss) as JSON."""
    return {"host": host, "vmnic": v.vmnic, "per_s": _r(v.per_s, 3), "drops_per_s": _r(v.drops / v.seconds, 3),
            "errors_per_s": None if v.errors is None else _r(v.errors / v.seconds, 3)}


def rank(assessments: list[Assessment]) -> list[Assessment]:
    return sorted(assessments, key=lambda a: order_key(a.severity, a.confirmed, a.klass, a.score, a.vm.name, a.vm.key))


def host_context(host: FleetHost, t: dict[str, float]) -> HostContext:
    """Host CPU usage (cpu.usage.average, hundredths of a percent), pNIC receive drops and errors per
    second, and the uplink loss over the floor, stated once (esxdiag.fleet.uplink)."""
    perf = host.perf
    if perf is None:
        return HostContext(error=host.perf_error)
    usage = [v for s in perf.series if s.counter == "cpu.usage.average" and s.instance == "" for v in s.values
             if v is not None]
    rates: dict[str, float | None] = {}
    for counter in ("net.droppedRx.summation", "net.errorsRx.summation"):
        series = [s for s in perf.series if s.counter == counter]
        chosen = [s for s in series if s.instance] or series  # per pNIC when expanded, else the aggregate
        values = [v for s in chosen for v in s.values if v is not None]
        samples = max((sum(v is not None for v in s.values) for s in chosen), default=0)
        rates[counter] = round(sum(values) / (samples * perf.interval_s), 3) if values and samples else None
    figures = host_uplink(host)
    lossy = figures.lossy(t) if figures is not None else ()
    return HostContext(
        cpu_usage_avg_pct=round(sum(usage) / len(usage) / 100, 2) if usage else None,
        pnic_drops_per_s=rates["net.droppedRx.summation"], pnic_errors_per_s=rates["net.errorsRx.summation"],
        uplink_loss=tuple(_loss(host.name, v) for v in lossy),
        uplink_loss_per_s=round(figures.per_s(t), 3) if figures is not None and lossy else None,
        uplink=(f"{figures.words(t)}: before the vSwitch, not the ring: one finding for the host, not one per VM on "
                "it") if figures is not None and lossy else None,
        source=f"vcenter-{perf.rollup}", error=host.perf_error,
        uplink_severity=drop_severity(figures.per_s(t), t, "uplink.drops_per_s_critical")
        if figures is not None and lossy else None)


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


def build_report(snapshot: Snapshot, thresholds: dict[str, float], snapshot_file: str | None = None,
                 evidence: Evidence = NO_EVIDENCE) -> FleetReport:
    """The fleet report of ``snapshot``, every VM judged with the evidence its deep check or a kept proof
    gives (esxdiag.fleet.confirm): made once, when the evidence is in."""
    t = thresholds
    uplinks = host_uplinks(snapshot)
    checks, notes = evidence.checks, evidence.notes
    assessed = rank([assess(vm, t, checks.get((vm.vcenter, vm.moid)), uplinks) for vm in snapshot.vms])
    rows = tuple(vm_row(i, a, t, checks.get(key), notes.get(key, ())) for i, a in enumerate(assessed, 1)
                 for key in [(a.vm.vcenter, a.vm.moid)])
    return FleetReport(
        **made_under(t),
        snapshot=SnapshotInfo(file=snapshot_file, collected_at=snapshot.collected_at, window_s=snapshot.window_s,
                              nic_types=snapshot.nic_types, filters=snapshot.filters,
                              notes=(*snapshot.notes, *event_notes(snapshot))),
        vcenters=snapshot.vcenters,
        not_scanned=tuple(NotScanned(v.name, v.url, v.error, v.error_kind) for v in snapshot.failed),
        counts=class_counts(rows), rows=rows, clusters=cluster_rollups(rows),
        hosts=host_rollups(rows, {(h.vcenter, h.name): host_context(h, t) for h in snapshot.hosts}),
        deep=evidence.section)


def host_uplinks(snapshot: Snapshot) -> dict[tuple[str, str], HostUplink]:
    """Every host's uplink figures by (vCenter, host name), for the VMs that ran on it (esxdiag.fleet.uplink)."""
    return {(h.vcenter, h.name): figures for h in snapshot.hosts if (figures := host_uplink(h)) is not None}


def with_evidence(first: FleetReport, snapshot: Snapshot, thresholds: dict[str, float],
                  evidence: Evidence) -> FleetReport:
    """``first`` (build_report of ``snapshot`` without evidence) once the evidence is in: what build_report
    with the evidence gives, judging again only the VMs the evidence names (a serve cycle holding a few
    kept proofs does not judge its whole fleet twice); every other row stays as it was, all ranked again."""
    named = set(evidence.checks) | set(evidence.notes)
    if not named:
        return first if evidence.section is None else dataclasses.replace(first, deep=evidence.section)
    uplinks, t = host_uplinks(snapshot), thresholds
    again = {key: vm_row(0, assess(vm, t, evidence.checks.get(key), uplinks), t, evidence.checks.get(key),
                         evidence.notes.get(key, ()))
             for vm in snapshot.vms for key in [(vm.vcenter, vm.moid)] if key in named}
    rows = [again.get((r.vcenter, r.moid), r) for r in first.rows]
    return dataclasses.replace(first.with_rows(rows), deep=evidence.section)


def worst_severity(report: FleetReport) -> str | None:
    deep = report.deep.vms if report.deep is not None else ()
    return worst_of([r.severity for r in report.rows] + [d.check.worst_severity for d in deep])


def deep_candidates(report: FleetReport, n: int) -> list[FleetRow]:
    """The N VMs a deep check helps most: drop suspicions on a vmxnet3 vNIC (cpu-and-drops, ring-suspect,
    and drops that vCenter's counters cannot place), most severe first, then by score. Not a VM that
    moved between hosts in the window (its counters span two ports; the check samples one host, after
    the window), nor an uplink-loss VM (no ring can help frames lost before the vSwitch)."""
    rows = [r for r in report.rows if not r.moves and (r.klass in DROP_CLASSES
            or r.klass == FleetClass.NO_DATA and r.dropping and "vmxnet3" in (r.nic_types or ()))]
    return sorted(rows, key=lambda r: (severity_order(r.severity), -r.score, r.rank))[:max(0, n)]


def tripped(report: FleetReport, severity: str) -> list[FleetRow]:
    """The rows whose severity (or deep check's worst finding) is `severity` or worse (--fail-on)."""
    limit = severity_order(severity)
    return [r for r in report.rows if severity_order(r.severity) <= limit
            or r.deep is not None and severity_order(r.deep.worst_severity) <= limit]


__all__ = ["Evidence", "NO_EVIDENCE", "build_report", "deep_candidates", "ranked", "tripped", "with_evidence",
           "worst_severity"]
