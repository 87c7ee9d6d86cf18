"""Each domain number moved into esxdiag.config is live: overriding it with --set changes the
outcome of the rule it feeds, on a case that sits between the default and the override."""

from __future__ import annotations

from esxdiag.config import load_thresholds
from esxdiag.result import Finding, RuleCheck
from esxdiag.rules import cpu, nic


def outcome(rule, vm, vnic, *overrides):
    found = rule(vm, vnic, load_thresholds(None, list(overrides)))
    assert len(found) == 1, found
    return found[0]


def test_ring_persist_warn_size(make):
    raised = make.vnic(size1=2048, rings_persisted=False)
    assert isinstance(outcome(nic.ring_persistence, make.vm(), raised), Finding)
    assert outcome(nic.ring_persistence, make.vm(), raised, "ring.persist_warn_size=2048").status == "pass"
    default = make.vnic(size1=1024, rings_persisted=False)
    assert outcome(nic.ring_persistence, make.vm(), default).status == "pass"
    low = outcome(nic.ring_persistence, make.vm(), default, "ring.persist_warn_size=512")
    assert isinstance(low, Finding) and low.evidence[0].threshold == 512


def test_ring_host_guest_tolerance_pct(make):
    apart = make.vnic(oob=(0, 1000), guest_oob=make.counter("guest", 0, 850))  # 150 apart: over 10 % of 1000
    assert isinstance(outcome(nic.host_guest_consistency, make.vm(), apart), Finding)
    assert outcome(nic.host_guest_consistency, make.vm(), apart,
                   "ring.host_guest_tolerance_pct=20").status == "pass"


def test_ring_host_guest_tolerance_min(make):
    small = make.vnic(oob=(0, 50), guest_oob=make.counter("guest", 0, 35))  # 15 apart: over 10 packets
    assert isinstance(outcome(nic.host_guest_consistency, make.vm(), small), Finding)
    assert outcome(nic.host_guest_consistency, make.vm(), small,
                   "ring.host_guest_tolerance_min=20").status == "pass"


def test_nic_link_speed_fast_gbps(make):
    ten = make.vnic(link_speed="10 Gbps")
    assert isinstance(outcome(nic.link_speed, make.vm(), ten), RuleCheck)
    assert isinstance(outcome(nic.link_speed, make.vm(), ten, "nic.link_speed_fast_gbps=25"), Finding)
    one = make.vnic(link_speed="1 Gbps")
    assert outcome(nic.link_speed, make.vm(), one, "nic.link_speed_fast_gbps=1").status == "pass"


def test_cpu_max_limited_share_of_ready(make):
    vm = make.vm(cpu=make.cpu(ready=12.0, limited=9.0), limit=800)  # %MLMTD is 75 % of %RDY
    contended = cpu.cpu_contention(vm, load_thresholds())[0]
    assert (contended.severity, "limit" in contended.title) == ("critical", False)
    explained = cpu.cpu_contention(vm, load_thresholds(None, ["cpu.max_limited_share_of_ready=0.7"]))[0]
    assert (explained.severity, "limit" in explained.title) == ("info", True)


def test_cpu_contention_band_names_the_thresholds_in_use(make):
    vm = make.vm(cpu=make.cpu(ready=7.0))
    assert cpu.cpu_contention(vm, load_thresholds())[0].title.endswith("investigate (5-10 %)")
    moved = cpu.cpu_contention(vm, load_thresholds(None, ["cpu.ready_pct_warning=6", "cpu.ready_pct_critical=9"]))
    assert moved[0].title.endswith("investigate (6-9 %)")


def test_uplink_drops_and_critical_rate(make):
    from esxdiag.join.facts import UplinkFacts
    from esxdiag.rules import causes

    link = UplinkFacts("vmnic1", "esx0", "Team Uplink", (make.counter("Receive missed errors", 0, 300),))
    nic_ = make.vnic(ring1=(5, 5), oob=(7, 7), uplinks=(link,))  # 300 in 60 s: 5/s
    found = outcome(causes.uplink_loss, make.vm(), nic_)
    assert isinstance(found, Finding) and found.severity == "warning"
    assert outcome(causes.uplink_loss, make.vm(), nic_, "uplink.drops_per_s_critical=4").severity == "critical"
    assert outcome(causes.uplink_loss, make.vm(), nic_, "uplink.drops=300").status == "pass"


def test_rx_other_drops_and_tx_drops(make):
    from esxdiag.rules import causes

    mtu = make.vnic(rx_reasons={"number of packets dropped due to pkt length exceeds vNic mtu": make.counter(
        "pkt length exceeds vNic mtu", 0, 40)})
    assert isinstance(outcome(causes.other_rx_drops, make.vm(), mtu), Finding)
    assert outcome(causes.other_rx_drops, make.vm(), mtu, "rx.other_drops=40").status == "pass"
    tx = make.vnic(tx={"guest tx ring full": make.counter("guest tx ring full", 0, 12)})
    found = outcome(causes.tx_drops, make.vm(), tx)
    assert isinstance(found, Finding) and "ethtool -G eth0 tx 4096" in found.remediation[0].commands
    assert outcome(causes.tx_drops, make.vm(), tx, "tx.drops=12").status == "pass"


def test_ring_hot_queue_share_pct(make):
    from esxdiag.rules import causes

    queues = {0: make.counter("q0", 0, 85), 1: make.counter("q1", 0, 15)}
    nic_ = make.vnic(guest_queue_oob=queues)
    assert causes.one_hot_queue(make.vm(), nic_, load_thresholds(None, [])) == []  # 85 % < 90 %
    assert isinstance(outcome(causes.one_hot_queue, make.vm(), nic_, "ring.hot_queue_share_pct=80"), Finding)


def test_cpu_run_pct_saturated_and_esxtop_coverage(make):
    from esxdiag.rules.verdict import decide

    busy = make.cpu()
    busy = type(busy)(**{**busy.__dict__, "run_pct": {"per-vCPU average": (96.0,) * 6}})
    nic_ = make.vnic()
    assert decide(make.vm(vnics=[nic_], cpu=busy), nic_, load_thresholds(None, [])).verdict == "guest-saturated"
    assert decide(make.vm(vnics=[nic_], cpu=busy), nic_,
                  load_thresholds(None, ["cpu.run_pct_saturated=97"])).verdict == "raise-ring1"
    short = type(busy)(**{**make.cpu(samples=3).__dict__, "sample_s": 2.0, "window_s": 60.0})
    words = decide(make.vm(vnics=[nic_], cpu=short), nic_, load_thresholds(None, [])).summary
    assert "6 s esxtop covered of the 60 s window" in words
    assert "esxtop covered" not in decide(make.vm(vnics=[nic_], cpu=short), nic_,
                                          load_thresholds(None, ["cpu.esxtop_coverage_min_pct=5"])).summary
