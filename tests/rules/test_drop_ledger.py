"""The drop ledger's parts: drop-reason labels by family across ESXi spellings, what is summed and what is only
shown, the residue, and the per-VM noise floor (issue 29, items 1 and 7)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from esxdiag.join.causes import RX_REASON_FAMILIES, reason_family
from esxdiag.join.facts import CounterWindow, DropSymptom, UplinkFacts
from esxdiag.rules.causes import EVENT_WORDS, REASON_WORDS
from esxdiag.rules.ledger import rx_ledger
from esxdiag.rules.verdict import decide

# the labels of a captured ESXi 8.x rxSummary that count lost or refused frames, in its order (docs/diagnosis.md)
ESXI8 = {
    "pkts receive error": "receive-error",
    "fail to map a rx buffer": "buffer-map-failure",
    "request to page in a buffer": "page-in",
    "# of times rx queue is stopped": "queue-stopped",
    "failed when copying into the guest buffer": "copy-failure",
    "# of pkts dropped due to large hdrs": "large-headers",
    "# of pkts dropped due to max number of SG limits": "sg-limit",
    "aggregate number of times packets are dropped by PktAgingList": "packet-aging",
    "# of pkts dropped due to large inner (encap) hdrs": "large-headers",
    "number of times packets are dropped by burst queue": "burst-queue",
    "number of times packets are dropped by rx try lock queueing": "rx-lock-queueing",
    "number of packets dropped by packet steering": "steering",
    "number of packets dropped due to pkt length exceeds vNic mtu": "mtu",
    "number of packets dropped due to pkt truncation": "truncation",
}
NOT_REASONS = ("running out of buffers", "# of times the 1st ring is full", "# of times the 2nd ring is full",
               "1st ring size", "2nd ring size", "pkts rx ok", "LRO pkts rx ok", "Whether rx burst queuing is enabled",
               "current backend burst queue length", "maximum backend burst queue length",
               "aggregate number of times packets are requeued", "number of packets delivered by burst queue",
               "number of memory region lookup pass in Rx.", "bytes rx ok")


@pytest.mark.parametrize("label, family", ESXI8.items())
def test_every_esxi8_drop_label_has_its_family(label, family):
    assert reason_family(label)[0] == family
    assert reason_family(label.upper())[0] == family  # copies change case


@pytest.mark.parametrize("label", NOT_REASONS)
def test_counters_that_are_not_drop_reasons_are_left_to_their_own_rules(label):
    assert reason_family(label) is None


@pytest.mark.parametrize("label", ["# of pkts dropped due to mystery filter", "number of packets discarded by vlan",
                                   "pkts lost in transit"])
def test_a_drop_label_no_family_knows_is_kept_in_its_own_words(label):
    assert reason_family(label) == ("unknown", "packets")


def test_every_family_has_words():
    packets = {family for family, _, kind in RX_REASON_FAMILIES if kind == "packets"} | {"page-absent", "unknown"}
    events = {family for family, _, kind in RX_REASON_FAMILIES if kind == "events"}
    assert packets == set(REASON_WORDS)
    assert events == set(EVENT_WORDS)


def _c(what, start, end, seconds=60.0):
    return CounterWindow(what, start, end, seconds, "f.txt", what)


def test_events_are_shown_never_summed_and_uplink_loss_is_outside_the_port(make):
    nic = make.vnic(oob=(0, 100), ring1=(0, 40), dropped_rx=_c("port droppedRx", 0, 160), rx_reasons={
        "# of times rx queue is stopped": _c("# of times rx queue is stopped", 0, 9000),
        "number of packets dropped by packet steering": _c("steering", 0, 60)})
    ledger = rx_ledger(nic)
    assert ledger.explained == 160 and ledger.unexplained == 0
    counted = {(line.cause, line.unit): line.counted for line in ledger.lines}
    assert counted == {("ring", "packets"): True, ("ring", "events"): False, ("queue-stopped", "events"): False,
                       ("steering", "packets"): True}
    link = UplinkFacts("vmnic1", "esx0", "Team Uplink", (_c("vmnic1 Receive missed errors", 0, 5000),))
    outside = rx_ledger(dataclasses.replace(nic, uplinks=(link,)))
    assert outside.explained == 160 and any(line.cause == "uplink" and not line.counted for line in outside.lines)


def test_without_a_port_count_the_ledger_says_so(make):
    ledger = rx_ledger(make.vnic(oob=(0, 100)))
    assert ledger.port_drops is None and ledger.unexplained is None
    assert "was not read" in ledger.words


def test_vcenter_counts_the_port_when_clientstats_was_not_read(make):
    vcenter = DropSymptom("vCenter net.droppedRx over the window", (100.0, 200.0, 0.0), "packets", "perf.json",
                          "net.droppedRx.summation[4000]", (1e6, 1e6, 1e6), 20.0)
    ledger = rx_ledger(make.vnic(oob=(0, 120), drop_symptoms=(vcenter,)))
    assert (ledger.port_drops, ledger.port_counter, ledger.seconds) == (300, "vCenter net.droppedRx", 60.0)
    assert ledger.unexplained == 180


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=200)
@given(port=st.integers(0, 2**40), oob=st.integers(0, 2**40), reason=st.integers(0, 2**40),
       ring=st.integers(0, 2**40))
def test_the_ledger_never_goes_negative_and_always_adds_up(make, port, oob, reason, ring):
    nic = make.vnic(oob=(0, oob), ring1=(0, ring), dropped_rx=_c("port droppedRx", 0, port),
                    rx_reasons={"number of packets dropped due to pkt truncation": _c("truncation", 0, reason)})
    ledger = rx_ledger(nic)
    assert ledger.explained == oob + reason  # ring-full episodes are never added
    assert ledger.unexplained == max(0, port - oob - reason) >= 0
    assert ("not explained" in ledger.words) == bool(ledger.unexplained and (oob or reason))


def test_seven_drops_in_an_hour_among_648_million_frames_are_not_exhaustion(make, thresholds):
    hour = 3600.0
    nic = make.vnic(oob=(1000, 1007), ring1=(50, 52), dropped_rx=_c("droppedRx", 1000, 1007, hour),
                    packets_rx=_c("pktsRxOK", 0, 648_000_000, hour))
    nic = dataclasses.replace(nic, host_out_of_buffers=_c("oob", 1000, 1007, hour), ring1_full=_c("r1", 50, 52, hour))
    verdict = decide(make.vm(vnics=(nic,)), nic, thresholds)
    assert verdict.verdict == "not-needed"
    assert "7 dropped in 3,600 s" in verdict.summary and "0.0108 per million" in verdict.summary
    assert not verdict.remediation


def test_the_same_drops_in_one_minute_are_over_the_floor(make, thresholds):
    nic = make.vnic(oob=(1000, 1007), ring1=(50, 52))  # 0.117/s; frames received unknown: the rate alone judges
    assert decide(make.vm(vnics=(nic,)), nic, thresholds).verdict == "raise-ring1"


def test_a_low_rate_on_a_quiet_vnic_is_over_the_per_million_floor(make, thresholds):
    hour = 3600.0
    nic = make.vnic(packets_rx=_c("pktsRxOK", 0, 2_000_000, hour))  # 200 drops of 2 million: 100 per million
    nic = dataclasses.replace(nic, host_out_of_buffers=_c("oob", 0, 200, hour), ring1_full=_c("r1", 0, 30, hour))
    assert decide(make.vm(vnics=(nic,)), nic, thresholds).verdict == "raise-ring1"


def test_vcenter_only_drops_under_the_floor_are_not_a_suspicion(make, thresholds):
    """Only vCenter saw the port (no host or guest counters): 4 drops in 15 realtime samples among 90 million
    frames is under both floors; 400 is a suspicion that asks for the ring counters."""
    def only_vcenter(dropped):
        values = (dropped,) + (0.0,) * 14
        symptom = DropSymptom("vCenter net.droppedRx over the window", values, "packets", "perf.json",
                              "net.droppedRx.summation[4000]", (6e6,) * 15, 20.0)
        return make.vnic(ring1=None, ring2=None, oob=None, drop_symptoms=(symptom,))
    quiet = only_vcenter(4.0)
    verdict = decide(make.vm(vnics=(quiet,)), quiet, thresholds)
    assert verdict.verdict == "not-needed" and "noise floor" in verdict.summary and "4 dropped in 300 s" in \
        verdict.summary
    busy = only_vcenter(400.0)
    assert decide(make.vm(vnics=(busy,)), busy, thresholds).verdict == "insufficient-evidence"
