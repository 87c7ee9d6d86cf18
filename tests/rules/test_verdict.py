"""The per-vNIC ring verdict of docs/diagnosis.md §5, each verdict shown both ways."""

from __future__ import annotations

import pytest

from esxdiag.rules.verdict import decide


def verdict(make, thresholds, vm_kwargs=None, **vnic_kwargs):
    nic = make.vnic(**vnic_kwargs)
    vm = make.vm(vnics=[nic], **(vm_kwargs or {}))
    return decide(vm, nic, thresholds)


def test_raise_ring1_when_ring1_fills_and_cpu_is_healthy(make, thresholds):
    v = verdict(make, thresholds)
    assert v.verdict == "raise-ring1"
    assert any(e.what == "1st ring full" and e.observed == 100 for e in v.evidence)
    linux = next(r for r in v.remediation if r.os == "linux")
    assert "ethtool -G eth0 rx 4096" in linux.commands
    assert linux.disruption and "MB" in linux.memory_cost
    assert any("nmcli" in p for p in linux.persistence)


def test_ring1_already_at_max_is_at_max_not_raise(make, thresholds):
    assert verdict(make, thresholds, size1=4096).verdict == "at-max"


def test_raise_ring2_only_when_ring2_fills(make, thresholds):
    assert verdict(make, thresholds, ring1=(5, 5), ring2=(10, 90)).verdict == "raise-ring2"
    assert verdict(make, thresholds, ring1=(5, 5), ring2=(10, 90), size2=4096).verdict == "at-max"


def test_cpu_limit_first_when_mlmtd_high(make, thresholds):
    v = verdict(make, thresholds, vm_kwargs={"cpu": make.cpu(ready=69.6, limited=69.52), "vcpus": 1, "limit": 800})
    assert v.verdict == "cpu-limit-first"
    assert "800 MHz" in v.summary and "69.5" in v.summary
    assert any(r.os == "vsphere" and any("cpu.limit -1" in c for c in r.commands) for r in v.remediation)


def test_configured_limit_without_cpu_figures_is_still_limit_first(make, thresholds):
    assert verdict(make, thresholds, vm_kwargs={"cpu": None, "limit": 800}).verdict == "cpu-limit-first"


def test_configured_limit_that_did_not_throttle_does_not_block_ring_raise(make, thresholds):
    assert verdict(make, thresholds, vm_kwargs={"limit": 800, "cpu": make.cpu(limited=0.0)}).verdict == "raise-ring1"


def test_cpu_contention_first_on_high_ready_or_costop(make, thresholds):
    assert verdict(make, thresholds, vm_kwargs={"cpu": make.cpu(ready=25.0)}).verdict == "cpu-contention-first"
    assert verdict(make, thresholds, vm_kwargs={"cpu": make.cpu(costop=6.0)}).verdict == "cpu-contention-first"
    assert verdict(make, thresholds, vm_kwargs={"cpu": make.cpu(ready=9.0)}).verdict == "raise-ring1"


def test_ready_in_investigate_band_shows_as_evidence_against(make, thresholds):
    v = verdict(make, thresholds, vm_kwargs={"cpu": make.cpu(ready=7.5)})
    assert v.verdict == "raise-ring1"
    assert any("%RDY" in e.what for e in v.evidence_against)


def test_missing_cpu_is_said_against_a_ring_raise(make, thresholds):
    v = verdict(make, thresholds, vm_kwargs={"cpu": None})
    assert v.verdict == "raise-ring1"
    assert any("not measured" in e.what for e in v.evidence_against)


def test_enable_rss_for_windows_single_queue_on_several_vcpus(make, thresholds):
    v = verdict(make, thresholds, vm_kwargs={"guest_os": "windows", "vcpus": 4}, guest_os="windows", queues=1, rss=False)
    assert v.verdict == "enable-rss"
    assert any("Enable-NetAdapterRss -Name 'Ethernet0'" in c for r in v.remediation for c in r.commands)


@pytest.mark.parametrize("vm_kwargs, nic_kwargs", [
    ({"guest_os": "windows", "vcpus": 4}, {"guest_os": "windows", "queues": 4}),
    ({"guest_os": "windows", "vcpus": 1}, {"guest_os": "windows", "queues": 1}),
    ({"guest_os": "linux", "vcpus": 4}, {"queues": 1}),
    ({"guest_os": "windows", "vcpus": 4}, {"guest_os": "windows", "queues": 1, "rss": True}),
])
def test_no_rss_verdict_when_queues_already_spread_or_not_windows(make, thresholds, vm_kwargs, nic_kwargs):
    assert verdict(make, thresholds, vm_kwargs=vm_kwargs, **nic_kwargs).verdict == "raise-ring1"


def test_not_needed_when_flat_and_zero(make, thresholds):
    v = verdict(make, thresholds, ring1=(0, 0), ring2=(0, 0), oob=(0, 0))
    assert v.verdict == "not-needed"


def test_past_exhaustion_only_when_flat_but_nonzero(make, thresholds):
    v = verdict(make, thresholds, ring1=(7086, 7086), ring2=(3284, 3284), oob=(10370, 10370))
    assert v.verdict == "past-exhaustion-only"
    assert verdict(make, thresholds, ring1=(7086, 7090), ring2=(3284, 3284), oob=(10370, 10370)).verdict == "raise-ring1"


def test_single_reading_is_insufficient_evidence(make, thresholds):
    v = verdict(make, thresholds, ring1=(None, 7086), ring2=(None, 3284), oob=(None, 10370))
    assert v.verdict == "insufficient-evidence"
    assert "10,370" in v.summary


def test_no_counters_is_insufficient_evidence(make, thresholds):
    v = verdict(make, thresholds, ring1=None, ring2=None, oob=None, missing=("vsish rxSummary: ssh disabled",))
    assert v.verdict == "insufficient-evidence"
    assert v.missing == ("vsish rxSummary: ssh disabled",)


def test_emulated_adapter_gets_no_ring_verdict(make, thresholds):
    assert verdict(make, thresholds, nic_type="e1000").verdict == "insufficient-evidence"


def test_counter_reset_is_not_a_negative_rate(make, thresholds):
    nic = make.vnic(ring1=(9000, 40), oob=(12000, 55))
    assert nic.ring1_full.reset and nic.ring1_full.delta == 40
    assert decide(make.vm(vnics=[nic]), nic, thresholds).verdict == "raise-ring1"


def test_thresholds_are_overridable(make, thresholds):
    thresholds.update({"ring.full_events": 500, "ring.drops": 500})
    assert verdict(make, thresholds).verdict == "past-exhaustion-only"
    thresholds.update({"cpu.ready_pct_critical": 0.5})
    assert verdict(make, thresholds, ring1=(0, 900)).verdict == "cpu-contention-first"


def test_remediation_quotes_untrusted_names(make, thresholds):
    v = verdict(make, thresholds, guest_interface="eth0;reboot", guest_os=None,
                vm_kwargs={"guest_os": None}, windows_adapter="Eth'0")
    commands = [c for r in v.remediation for c in r.commands]
    assert "ethtool -G 'eth0;reboot' rx 4096" in commands
    assert any("-Name 'Eth''0'" in c for c in commands)


def test_costop_alone_with_ready_missing_is_contention(make, thresholds):
    cpu = make.cpu(costop=20.0)
    cpu = type(cpu)(cpu.source, cpu.file, cpu.times, {}, cpu.costop_pct, cpu.max_limited_pct, {}, "test")
    v = verdict(make, thresholds, vm_kwargs={"cpu": cpu})
    assert v.verdict == "cpu-contention-first" and "%CSTP 20.0%" in v.summary


def test_ring1_at_4032_with_jumbo_frames_is_at_max(make, thresholds):
    assert verdict(make, thresholds, size1=4032, ring1_max=4032, mtu=9000).verdict == "at-max"


# --- issue 6: remedies that change something, e1000, latency sensitivity, bounds, non-finite CPU ------

def _commands(v):
    return [c for r in v.remediation for c in r.commands]


def test_at_max_with_a_queue_per_vcpu_does_not_suggest_ethtool_L(make, thresholds):
    """2 rx queues for 2 vCPUs: `ethtool -L eth0 combined 2` would change nothing; more vCPUs would."""
    v = verdict(make, thresholds, size1=4096, queues=2, vm_kwargs={"vcpus": 2})
    assert v.verdict == "at-max"
    assert not any("ethtool -L" in c for c in _commands(v))
    assert any(c.startswith("govc vm.change -vm vm1 -c 4") for c in _commands(v))
    assert "already has 2 rx queues for 2 vCPUs" in v.summary


def test_at_max_with_fewer_queues_than_vcpus_suggests_more_queues(make, thresholds):
    v = verdict(make, thresholds, size1=4096, queues=1, vm_kwargs={"vcpus": 4})
    assert "ethtool -L eth0 combined 4" in _commands(v)


def test_at_max_windows_with_rss_on_and_a_queue_per_vcpu_suggests_vcpus_not_rss(make, thresholds):
    v = verdict(make, thresholds, size1=4096, queues=4, rss=True, guest_os="windows",
                vm_kwargs={"vcpus": 4, "guest_os": "windows"})
    assert v.verdict == "at-max"
    assert not any("Enable-NetAdapterRss" in c for c in _commands(v))


def test_e1000_verdict_gives_the_change_to_vmxnet3(make, thresholds):
    v = verdict(make, thresholds, nic_type="e1000", network="VM Network")
    assert v.verdict == "insufficient-evidence" and "vmxnet3" in v.summary
    (change,) = v.remediation
    text = " ".join(change.commands + change.notes + (change.disruption,))
    assert "Set-NetworkAdapter -Type Vmxnet3" in text and "-net.adapter vmxnet3" in text
    assert "-net.address 00:50:56:00:00:01" in text  # keeps the MAC
    assert "MAC" in text and "powered off" in text.lower() and "driver" in text


def test_latency_sensitive_vm_gets_the_note_beside_a_raise(make, thresholds):
    v = verdict(make, thresholds, vm_kwargs={"latency_sensitivity": "high"})
    assert v.verdict == "raise-ring1"
    assert "may be deliberate" in v.summary and "512" in v.summary
    assert any(e.observed == "high" for e in v.evidence_against)
    assert "deliberate" not in verdict(make, thresholds, vm_kwargs={"latency_sensitivity": "normal"}).summary


def test_nan_cpu_figures_are_never_compared(make, thresholds):
    """A CPU-limited VM whose %MLMTD/%RDY cells are NaN: not 'healthy', no raise on a false basis."""
    nan = float("nan")
    cpu = make.cpu(ready=nan, limited=nan, costop=nan)
    v = verdict(make, thresholds, vm_kwargs={"cpu": cpu})
    assert "CPU is not measured" in v.summary
    assert not any("<=" == e.comparison for e in v.evidence)
    inf = make.cpu(ready=float("inf"), limited=float("inf"))
    assert "healthy" not in verdict(make, thresholds, vm_kwargs={"cpu": inf}).summary


def test_cpu_bounds_decide_only_where_they_can(make, thresholds):
    """Without a vCPU count, esxtop's group sum / Members is the least the per-vCPU figure can be and the
    sum the most: over the threshold on the least is contention; under it on the most is healthy;
    straddling it is neither, and drops rising then get no ring raise (conservative side)."""
    import dataclasses

    def bounded(ready, members=6, bound="lower"):
        return dataclasses.replace(make.cpu(ready=ready), bound=bound, bound_divisor=members)

    assert verdict(make, thresholds, vm_kwargs={"cpu": bounded(14.5)}).verdict == "cpu-contention-first"
    healthy = verdict(make, thresholds, vm_kwargs={"cpu": bounded(0.5)})  # at most 3 %
    assert healthy.verdict == "raise-ring1" and "CPU is healthy" in healthy.summary
    straddled = verdict(make, thresholds, vm_kwargs={"cpu": bounded(3.0)})  # between 3 and 18 %
    assert straddled.verdict == "insufficient-evidence"
    assert "between 3.00% and 18.00%" in straddled.summary and any("vCPU count" in m for m in straddled.missing)
    assert verdict(make, thresholds, vm_kwargs={"cpu": bounded(30.0, bound="upper")}).verdict == "insufficient-evidence"
    assert verdict(make, thresholds, vm_kwargs={"cpu": bounded(4.0, bound="upper")}).verdict == "raise-ring1"
