"""/metrics: a prometheus_client Collector over serve's state (no hand-written exposition).

Each vCenter's samples are built once per good cycle from its last fleet report and its deep
checks, and the VM and vNIC families are encoded to text once per such change (``Exposition``: at
2,000 VMs 14,000 series, 0.2 s of CPU a scrape if encoded every time); a scrape encodes serve's own
families (cycles, history, process) and appends that text. A VM gone from the vCenter is gone from
its next report, so its series end there. A vCenter whose last cycle failed keeps its last good
series; ``esxdiag_vcenter_stale`` says so. A host with an uplink finding has 2 series (its loss rate
and the finding's severity).

Series per VM: at most 7 (class, severity, two drop rates, three CPU figures; a figure that was not
measured has no series, never 0), plus for a VM whose row shows a deep check 1 (its check's time)
and 6 per vNIC (ring-1-full/s, ring-2-full/s, out-of-buffer/s, two ring sizes, the verdict). The
deep series are the row's own deep check, the one its class rests on: /metrics, the fleet page
and the VM's page agree for the same VM in the same cycle. docs/serve.md lists every metric.
"""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from esxdiag import __version__
from esxdiag.fleet.confirm import RING_COUNTERS
from esxdiag.fleet.model import FleetReport
from esxdiag.scanning.proofs import checked_ts
from esxdiag.serve.state import State, VcenterState
from esxdiag.vocabulary import FLEET_CLASSES, SEVERITY_VALUES

EOF = b"# EOF\n"
VM_LABELS = ("vcenter", "vm", "moid", "cluster", "host")
ERROR_KINDS = ("unreachable", "tls", "auth", "timeout", "permission", "query", "bad-answer", "not-found", "internal")
# (name, help, report row key) per VM
VM_GAUGES = (
    ("esxdiag_fleet_vm_rx_drops_per_second", "vCenter net.droppedRx over the scan window, per second", "drops_per_s"),
    ("esxdiag_fleet_vm_rx_drops_per_1000_packets", "receive drops per 1,000 packets received", "drops_per_1000"),
    ("esxdiag_fleet_vm_ready_worst_vcpu_percent", "worst vCPU's window-average %RDY", "ready_worst_pct"),
    ("esxdiag_fleet_vm_costop_worst_vcpu_percent", "worst vCPU's window-average %CSTP", "costop_worst_pct"),
    ("esxdiag_fleet_vm_max_limited_worst_vcpu_percent", "worst vCPU's window-average %MLMTD (CPU limit)",
     "max_limited_worst_pct"),
)
# (name, help, deep vNIC row key) per deep-checked vNIC
VNIC_GAUGES = (
    ("esxdiag_deep_vnic_ring1_full_per_second", "host vsish rxSummary: ring 1 full events per second (deep check)",
     "ring1_full"),
    ("esxdiag_deep_vnic_ring2_full_per_second", "host vsish rxSummary: ring 2 full events per second (deep check)",
     "ring2_full"),
    ("esxdiag_deep_vnic_out_of_buffer_drops_per_second", "host vsish rxSummary: out-of-buffer drops per second "
     "(deep check)", "host_out_of_buffers"),
    ("esxdiag_deep_vnic_ring1_size", "rx ring 1 size in descriptors (deep check)", "ring1_size"),
    ("esxdiag_deep_vnic_ring2_size", "rx ring 2 size in descriptors (deep check)", "ring2_size"),
)
CLASS = ("esxdiag_fleet_vm_class", "the VM's fleet class (value 1, label class)")
SEVERITY = ("esxdiag_fleet_vm_severity", "the class's severity: 0 none, 1 info, 2 warning, 3 critical")
VERDICT = ("esxdiag_deep_vnic_verdict", "the deep check's ring verdict for the vNIC (value 1, label verdict; label "
           "counters: what it rests on, ring = vsish rxSummary, port-drops = the port's droppedRx alone)")
DEEP_TIME = ("esxdiag_deep_vm_last_check_timestamp_seconds", "when the VM's shown deep check ended")
HOST_LABELS = ("vcenter", "host")
UPLINK_LOSS = ("esxdiag_fleet_host_uplink_loss_per_second", "received frames the host's physical uplinks lose per "
               "second (vCenter vmnic net.droppedRx + net.errorsRx over the floor; hosts with an uplink finding only)")
UPLINK_SEVERITY = ("esxdiag_fleet_host_uplink_severity", "the host's uplink finding's severity: 3 critical (over "
                   "uplink.drops_per_s_critical), 2 warning")
VNIC_LABELS = VM_LABELS + ("vnic",)
FLEET_FAMILIES = (  # (name, help, labels)
    (CLASS[0], CLASS[1], VM_LABELS + ("class",)),
    (SEVERITY[0], SEVERITY[1], VM_LABELS),
    *((name, text, VM_LABELS) for name, text, _ in VM_GAUGES),
    (DEEP_TIME[0], DEEP_TIME[1], VM_LABELS),
    *((name, text, VNIC_LABELS) for name, text, _ in VNIC_GAUGES),
    (VERDICT[0], VERDICT[1], VNIC_LABELS + ("verdict", "counters")),
    (UPLINK_LOSS[0], UPLINK_LOSS[1], HOST_LABELS),
    (UPLINK_SEVERITY[0], UPLINK_SEVERITY[1], HOST_LABELS),
)


def counters_read(nic) -> str:
    """Which host counters a vNIC's verdict rests on (esxdiag.fleet.confirm.proven_by): ring, port-drops
    or other."""
    if any(nic.get(key) is not None for key, _ in RING_COUNTERS):
        return "ring"
    return "port-drops" if nic.get("dropped_rx") is not None else "other"


def vm_samples(entry: VcenterState) -> dict[str, list[Sample]]:
    """Every per-VM and per-vNIC sample of one vCenter's last good report, by family name."""
    out: dict[str, list[Sample]] = {name: [] for name, _, _ in FLEET_FAMILIES}
    for h in entry.document.hosts if entry.document is not None else ():
        if h.context is not None and h.context.uplink_loss_per_s is not None:
            labels = {"vcenter": h.vcenter, "host": h.name}
            out[UPLINK_LOSS[0]].append(Sample(UPLINK_LOSS[0], labels, h.context.uplink_loss_per_s))
            out[UPLINK_SEVERITY[0]].append(Sample(UPLINK_SEVERITY[0], labels,
                                                  float(SEVERITY_VALUES[h.context.uplink_severity])))
    for row in entry.document.rows if entry.document is not None else ():
        labels = {"vcenter": row.vcenter, "vm": row.name, "moid": row.moid, "cluster": row.cluster or "",
                  "host": row.host or ""}
        out[CLASS[0]].append(Sample(CLASS[0], {**labels, "class": row.klass}, 1.0))
        out[SEVERITY[0]].append(Sample(SEVERITY[0], labels, float(SEVERITY_VALUES[row.severity])))
        for name, _, key in VM_GAUGES:
            if (value := getattr(row, key)) is not None:
                out[name].append(Sample(name, labels, float(value)))
        check = row.deep
        if check is None:
            continue
        if check.checked_at:
            out[DEEP_TIME[0]].append(Sample(DEEP_TIME[0], labels, checked_ts(check.checked_at)))
        for index, nic in enumerate(check.vnics):
            nic_labels = {**labels, "vnic": nic.get("label") or nic.get("mac") or f"vnic{index}"}
            for name, _, key in VNIC_GAUGES:
                if nic.get(key) is not None:
                    out[name].append(Sample(name, nic_labels, float(nic[key])))
            out[VERDICT[0]].append(Sample(VERDICT[0], {**nic_labels, "verdict": nic["verdict"],
                                                      "counters": counters_read(nic)}, 1.0))
    return out


def vcenter_families(entries: list[VcenterState]) -> list[Metric]:
    """Per vCenter: how its cycles go."""
    g = {name: GaugeMetricFamily(name, text, labels=["vcenter"]) for name, text in (
        ("esxdiag_vcenter_last_scan_success", "1 when the vCenter's last cycle scanned it, 0 when it failed"),
        ("esxdiag_vcenter_stale", "1 when its VM series are from an older cycle (the last one failed, or the one "
         "running has run past the interval)"),
        ("esxdiag_vcenter_cycle_overdue_seconds", "how long the running cycle has run past the interval (0: none)"),
        ("esxdiag_vcenter_last_success_timestamp_seconds", "when the last good cycle ended"),
        ("esxdiag_vcenter_last_scan_timestamp_seconds", "when the last cycle ended, good or not"),
        ("esxdiag_vcenter_scan_duration_seconds", "the last cycle's wall time (scan, rules, deep check, history)"),
        ("esxdiag_vcenter_last_scan_requests", "SOAP requests of the last cycle's scan"),
        ("esxdiag_vcenter_scan_interval_seconds", "the interval between cycles"),
        ("esxdiag_vcenter_vms", "VMs in the last good cycle"),
        ("esxdiag_vcenter_cycle_running", "1 while a cycle runs"),
        ("esxdiag_vcenter_tls_verified", "0 when the vCenter's TLS certificate is not verified (--insecure or its "
         "like, no thumbprint pinned): anyone on the path can read its password"))}
    c = {name: CounterMetricFamily(name, text, labels=["vcenter"]) for name, text in (
        ("esxdiag_vcenter_scans", "cycles finished, good or not"),
        ("esxdiag_vcenter_scans_skipped", "cycles not started because the one before still ran"),
        ("esxdiag_vcenter_scans_overrun", "cycles that ran longer than the interval"),
        ("esxdiag_vcenter_requests", "SOAP requests sent"),
        ("esxdiag_vcenter_deep_checks", "VMs deep-checked"),
        ("esxdiag_vcenter_deep_host_errors", "deep-check hosts that could not be sampled"))}
    errors = CounterMetricFamily("esxdiag_vcenter_scan_errors", "cycles that could not scan the vCenter, by kind",
                                 labels=["vcenter", "kind"])
    classes = GaugeMetricFamily("esxdiag_fleet_class_vms", "VMs per fleet class in the last good cycle",
                                labels=["vcenter", "class"])
    now = time.time()
    for e in entries:
        vc = [e.name]
        overdue = e.overdue_s(now)
        for name, value in (("esxdiag_vcenter_last_scan_success", None if e.last_ok is None else int(e.last_ok)),
                            ("esxdiag_vcenter_stale", int(e.stale or overdue > 0)),
                            ("esxdiag_vcenter_cycle_overdue_seconds", round(overdue, 3)),
                            ("esxdiag_vcenter_cycle_running", int(e.running)),
                            ("esxdiag_vcenter_last_success_timestamp_seconds", e.good_ts),
                            ("esxdiag_vcenter_last_scan_timestamp_seconds", e.last_ts),
                            ("esxdiag_vcenter_scan_duration_seconds", e.last_seconds),
                            ("esxdiag_vcenter_last_scan_requests", e.last_requests),
                            ("esxdiag_vcenter_scan_interval_seconds", e.interval_s),
                            ("esxdiag_vcenter_tls_verified", int(e.tls_verified)),
                            ("esxdiag_vcenter_vms", len(e.document.rows) if e.document else None)):
            if value is not None:
                g[name].add_metric(vc, value)
        for name, value in (("esxdiag_vcenter_scans", e.cycles), ("esxdiag_vcenter_scans_skipped", e.skipped),
                            ("esxdiag_vcenter_scans_overrun", e.overran),
                            ("esxdiag_vcenter_requests", e.requests), ("esxdiag_vcenter_deep_checks", e.deep_checked),
                            ("esxdiag_vcenter_deep_host_errors", e.deep_host_errors)):
            c[name].add_metric(vc, value)
        for kind in sorted(set(ERROR_KINDS) | set(e.failures)):
            errors.add_metric([e.name, kind], e.failures.get(kind, 0))
        if e.document:
            for klass in FLEET_CLASSES:
                classes.add_metric([e.name, klass], e.document.counts.get(klass, 0))
    return [*g.values(), *c.values(), errors, classes]


def history_families(state: State) -> list[Metric]:
    """The history file's own health: a fault there is not a vCenter's."""
    success = GaugeMetricFamily("esxdiag_history_last_write_success",
                                "1 when the last cycle wrote the history, 0 when it could not (the scan stands)")
    written = GaugeMetricFamily("esxdiag_history_last_write_timestamp_seconds", "when a cycle last wrote the history")
    errors = CounterMetricFamily("esxdiag_history_write_errors", "cycles whose history write failed")
    if state.history_written_ts is not None or state.history_error is not None:
        success.add_metric([], int(state.history_error is None))
    if state.history_written_ts is not None:
        written.add_metric([], state.history_written_ts)
    errors.add_metric([], state.history_errors)
    return [success, written, errors]


class ServeCollector(Collector):
    """Every family of /metrics; ``own=False``: the VM and vNIC families alone, ``fleet=False``: the rest."""

    def __init__(self, state: State, *, own: bool = True, fleet: bool = True):
        self.state, self.own, self.fleet = state, own, fleet
        self._cache: dict[str, tuple[FleetReport | None, object, dict[str, list[Sample]]]] = {}
        self._lock = threading.Lock()  # scrapes may run at once

    def _samples(self, entry: VcenterState) -> dict[str, list[Sample]]:
        """The vCenter's VM samples, built again only when a good cycle replaced its document or
        deep checks (never mutated: compared by identity, the cache holding the objects)."""
        with self._lock:
            cached = self._cache.get(entry.name)
            if cached is None or cached[0] is not entry.document or cached[1] is not entry.deep:
                cached = (entry.document, entry.deep, vm_samples(entry))
                self._cache[entry.name] = cached
            return cached[2]

    def collect(self):
        entries = self.state.views()
        if self.own:
            info = InfoMetricFamily("esxdiag_serve", "the esxdiag serving these metrics")
            info.add_metric([], {"version": __version__})
            yield info
            yield from vcenter_families(entries)
            yield from history_families(self.state)
        if not self.fleet:
            return
        per_vcenter = [self._samples(e) for e in entries if e.document is not None]
        for name, text, _ in FLEET_FAMILIES:
            family = GaugeMetricFamily(name, text)
            for samples in per_vcenter:
                family.samples.extend(samples[name])
            yield family

    def describe(self):
        """Every family this collector can expose (its names, without samples)."""
        yield InfoMetricFamily("esxdiag_serve", "the esxdiag serving these metrics")
        yield from vcenter_families([])
        yield from history_families(State([]))
        for name, text, _ in FLEET_FAMILIES:
            yield GaugeMetricFamily(name, text)


class Exposition:
    """/metrics as bytes. Serve's own families (and the process's) are encoded on every scrape; the VM and
    vNIC families only when a vCenter's report or deep checks changed (compared by identity: both are
    never edited), and the same text is handed out until then."""

    def __init__(self, state: State):
        self.state = state
        self.live = CollectorRegistry()
        self.live.register(ServeCollector(state, fleet=False))
        ProcessCollector(registry=self.live)
        PlatformCollector(registry=self.live)
        self.fleet = CollectorRegistry()
        self.fleet.register(ServeCollector(state, own=False))
        self._lock = threading.Lock()
        self._cached: dict[object, tuple[tuple, bytes]] = {}  # encoder -> (what it was encoded from, text)

    def _fleet_text(self, encoder) -> bytes:
        shown = tuple((e.name, e.document, e.deep) for e in self.state.views())
        with self._lock:
            cached = self._cached.get(encoder)
            if cached is None or len(cached[0]) != len(shown) or any(
                    a[0] != b[0] or a[1] is not b[1] or a[2] is not b[2] for a, b in zip(cached[0], shown)):
                cached = (shown, encoder(self.fleet))
                self._cached[encoder] = cached
            return cached[1]

    def render(self, accept: str) -> tuple[bytes, str]:
        """(the body, its media type) for a scrape sending ``accept``."""
        encoder, media_type = choose_encoder(accept)
        live = encoder(self.live)
        if live.endswith(EOF):  # OpenMetrics: one end marker, after the VM families
            live = live[:-len(EOF)]
        return live + self._fleet_text(encoder), media_type
