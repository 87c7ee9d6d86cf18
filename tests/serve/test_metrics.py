"""/metrics from serve's state: one class series per VM, the figures, the deep check's ring figures
and verdict per vNIC, per-vCenter scan health, stale vCenters kept and marked, gone VMs gone,
Prometheus naming (checked by `promtool check metrics` when installed), series per VM as documented."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timezone
from types import MappingProxyType

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.state import DeepCheck, State, VcenterState

HOSTILE = 'web "01"\nevil_metric 2 {x="y"}'
VNIC = {"label": "Network adapter 1", "mac": "00:50:56:00:00:01", "verdict": "raise-ring1", "ring1_full": 23.6,
        "ring2_full": 10.9, "host_out_of_buffers": 34.614, "ring1_size": 256, "ring2_size": 256}


def scrape(state: State) -> dict:
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))
    return {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}


def samples(families: dict, name: str, **match) -> list:
    base = name[:-6] if name.endswith("_total") else name
    return [s for s in families[base].samples if s.name == name and all(s.labels.get(k) == v for k, v in match.items())]


@pytest.fixture
def state(fleet_document, make_vm):
    ring = make_vm("ring01", "vm-1", drops=300)
    fleet = [ring, make_vm(HOSTILE, "vm-2"), make_vm("off", "vm-3", power="poweredOff"),
             make_vm("slow", "vm-4", ready_ms=3000)]
    check = DeepCheck("vc1:443", "vm-1", "ring01", "2026-11-23T02:46:00Z", 1795000000.0, ("raise-ring1",),
                      "critical", "deep/x/report.html", None, (VNIC,))
    good = fleet_document("vc1:443", fleet, deep={"vm-1": check})
    return State([
        VcenterState("vc1:443", "https://vc1/sdk", 300, document=good, good_ts=1795000100.0, last_ts=1795000100.0,
                     last_ok=True, last_seconds=4.2, last_requests=12, cycles=3, requests=36,
                     deep=MappingProxyType({"vm-1": check}), deep_checked=1),
        VcenterState("vc2:443", "https://vc2/sdk", 300, document=fleet_document("vc2:443", [make_vm("db01", "vm-9")]),
                     good_ts=1794999000.0, last_ts=1795000100.0, last_ok=False, last_error="vc2:443: unreachable",
                     last_error_kind="unreachable", cycles=5, failures=MappingProxyType({"unreachable": 2})),
        VcenterState("vc3:443", "https://vc3/sdk", 300, last_ts=1795000100.0, last_ok=False, cycles=1,
                     failures=MappingProxyType({"tls": 1})),
    ])


def test_one_class_series_per_vm_with_severity_and_the_figures(state):
    families = scrape(state)
    classes = {(s.labels["vcenter"], s.labels["vm"]): s.labels["class"]
               for s in samples(families, "esxdiag_fleet_vm_class")}
    assert classes == {("vc1:443", "ring01"): "ring-exhaustion", ("vc1:443", HOSTILE): "healthy",
                       ("vc1:443", "off"): "no-data", ("vc1:443", "slow"): "cpu-contention",
                       ("vc2:443", "db01"): "healthy"}
    assert "evil_metric" not in families  # a VM name is a label value, escaped, never a line of its own
    assert {s.labels["vm"]: s.value for s in samples(families, "esxdiag_fleet_vm_severity", vcenter="vc1:443")} == {
        "ring01": 3, HOSTILE: 0, "off": 0, "slow": 3}
    drops = {s.labels["vm"]: s.value for s in samples(families, "esxdiag_fleet_vm_rx_drops_per_second")}
    assert drops["ring01"] == 15.0 and "off" not in drops  # not measured: absent, never 0
    ring = samples(families, "esxdiag_fleet_vm_ready_worst_vcpu_percent", vm="ring01")[0]
    assert ring.labels == {"vcenter": "vc1:443", "vm": "ring01", "moid": "vm-1", "cluster": "C1", "host": "esx1"}
    assert samples(families, "esxdiag_fleet_class_vms", vcenter="vc1:443", **{"class": "ring-exhaustion"})[0].value == 1


def test_deep_checked_vnics_export_ring_figures_and_the_verdict(state):
    families = scrape(state)
    (verdict,) = samples(families, "esxdiag_deep_vnic_verdict")
    assert verdict.labels["verdict"] == "raise-ring1" and verdict.labels["vnic"] == "Network adapter 1"
    assert verdict.labels["counters"] == "ring"  # rxSummary was read: the proof rests on the ring counters
    assert samples(families, "esxdiag_deep_vnic_ring1_full_per_second")[0].value == 23.6
    assert samples(families, "esxdiag_deep_vnic_out_of_buffer_drops_per_second")[0].value == 34.614
    assert samples(families, "esxdiag_deep_vnic_ring1_size")[0].value == 256
    ended = datetime(2026, 11, 23, 2, 46, tzinfo=timezone.utc).timestamp()  # the row's check: 2026-11-23T02:46:00Z
    assert samples(families, "esxdiag_deep_vm_last_check_timestamp_seconds")[0].value == ended


def test_vcenter_health_stale_kept_and_errors_by_kind(state):
    families = scrape(state)
    ok = {s.labels["vcenter"]: s.value for s in samples(families, "esxdiag_vcenter_last_scan_success")}
    assert ok == {"vc1:443": 1, "vc2:443": 0, "vc3:443": 0}
    stale = {s.labels["vcenter"]: s.value for s in samples(families, "esxdiag_vcenter_stale")}
    assert stale == {"vc1:443": 0, "vc2:443": 1, "vc3:443": 0}
    assert samples(families, "esxdiag_fleet_vm_class", vm="db01")  # the stale vCenter's VMs stay
    assert samples(families, "esxdiag_vcenter_scan_errors_total", vcenter="vc2:443", kind="unreachable")[0].value == 2
    assert samples(families, "esxdiag_vcenter_scan_errors_total", vcenter="vc3:443", kind="tls")[0].value == 1
    assert samples(families, "esxdiag_vcenter_scan_errors_total", vcenter="vc1:443", kind="auth")[0].value == 0
    assert samples(families, "esxdiag_vcenter_requests_total", vcenter="vc1:443")[0].value == 36
    assert samples(families, "esxdiag_vcenter_last_success_timestamp_seconds", vcenter="vc2:443")[0].value == 1794999000
    assert not samples(families, "esxdiag_vcenter_vms", vcenter="vc3:443")  # never scanned: no VM count


def test_a_vm_gone_from_the_next_cycle_is_gone_from_metrics(state, fleet_document, make_vm):
    collector = ServeCollector(state)
    before = {s.labels["vm"] for f in collector.collect() if f.name == "esxdiag_fleet_vm_class" for s in f.samples}
    assert "slow" in before
    state.update("vc1:443", document=fleet_document("vc1:443", [make_vm("ring01", "vm-1")]))
    after = {s.labels["vm"] for f in collector.collect() if f.name == "esxdiag_fleet_vm_class" for s in f.samples}
    assert after == {"ring01", "db01"}


def test_series_per_vm_are_as_documented(state):
    """At most 7 per VM; a deep-checked VM adds 1 plus 6 per vNIC (docs/serve.md)."""
    families = scrape(state)
    per_vm: dict = {}
    for family in families.values():
        for s in family.samples:
            if "moid" in s.labels:
                key = (s.labels["moid"], s.labels["vcenter"])
                per_vm[key] = per_vm.get(key, 0) + 1
    assert per_vm[("vm-4", "vc1:443")] == 7 and per_vm[("vm-1", "vc1:443")] == 7 + 1 + 6
    assert per_vm[("vm-3", "vc1:443")] == 2  # powered off: class and severity only


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (apt-get install prometheus)")
def test_promtool_finds_nothing_to_lint(state):
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))
    done = subprocess.run(["promtool", "check", "metrics"], input=generate_latest(registry), capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


def test_a_scrape_gives_every_family_and_encodes_the_vm_families_once_per_report(state, fleet_document, make_vm,
                                                                                monkeypatch):
    """/metrics (esxdiag.serve.metrics.Exposition): the same samples one registry of every family gives, in
    text and in OpenMetrics (one end marker, last); the VM and vNIC families encoded again only when a
    vCenter's report changed."""
    import esxdiag.serve.metrics as metrics

    exposition = metrics.Exposition(state)
    whole = CollectorRegistry()
    whole.register(ServeCollector(state))
    wanted = {f.name: sorted(map(str, f.samples)) for f in text_string_to_metric_families(generate_latest(whole).decode())
              if f.name.startswith(("esxdiag_fleet", "esxdiag_deep", "esxdiag_vcenter_vms"))}
    body, media_type = exposition.render("")
    got = {f.name: sorted(map(str, f.samples)) for f in text_string_to_metric_families(body.decode())}
    assert media_type.startswith("text/plain") and {k: got[k] for k in wanted} == wanted
    assert "process_cpu_seconds" in got and "esxdiag_vcenter_scans" in got  # serve's own and the process's
    open_metrics, media_type = exposition.render("application/openmetrics-text; version=1.0.0")
    assert "openmetrics" in media_type and open_metrics.count(b"# EOF\n") == 1 and open_metrics.endswith(b"# EOF\n")

    exposition = metrics.Exposition(state)
    encoded = []
    collect = exposition.fleet.collect
    monkeypatch.setattr(exposition.fleet, "collect", lambda: encoded.append(1) or collect())
    for _ in range(3):
        exposition.render("")
    assert len(encoded) == 1  # the VM families' text once per report, not per scrape
    state.update("vc1:443", document=fleet_document("vc1:443", [make_vm("ring01", "vm-1")]))
    body, _ = exposition.render("")
    assert len(encoded) == 2 and b'vm="slow"' not in body
