"""Issue 29, item 4: samples in capture order. The bundles are built by tests/fixtures/situations/build_order.py
from the lab's ring-exhaustion example: in each the host and the guest count the same +1,900 drops in the ~60 s
window, the guest retransmits +1,900 TCP segments and its 32-bit segments-sent counter crosses 2**32
(+1,235,529); one target's clock steps an hour back or forward between the two samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.bundle import Bundle
from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.join.readings import Readings
from esxdiag.reports.json_report import to_jsonable
from esxdiag.reports.text import render_text

SITUATIONS = Path(__file__).resolve().parents[1] / "fixtures" / "situations"
HOST, GUEST = "esxi-esx0.lab.local", "guest-iperf-test1"
STEPPED = [("guest-clock-stepped-back", GUEST, "stepped back"), ("guest-clock-jumped-forward", GUEST, "jumped forward"),
           ("host-clock-stepped-back", HOST, "stepped back"), ("host-clock-jumped-forward", HOST, "jumped forward")]


def run(name: str):
    result = analyze(SITUATIONS / name, dict(DEFAULT_THRESHOLDS))
    doc = to_jsonable(result)
    return doc, doc["vms"][0], " ".join(render_text(result, width=200).split())


def assert_true_window(vm: dict, nic: dict, text: str) -> None:
    for key in ("host_out_of_buffers", "dropped_rx", "guest_oob"):
        metric = nic["metrics"][key]
        assert (metric["delta"], metric["reset"]) == (1_900, False), key
        assert 55 <= metric["seconds"] <= 66, key  # the ~60 s the window really lasted, never an hour
        assert 28 <= metric["per_s"] <= 35, key
    sent, retrans = vm["tcp"]["segments_sent"], vm["tcp"]["retransmitted_segments"]
    assert (sent["delta"], sent["reset"], retrans["delta"]) == (1_235_529, False, 1_900)
    assert 55 <= sent["seconds"] <= 66 and 55 <= retrans["seconds"] <= 66
    assert not any(f["rule"] == "host-guest-drops" for f in vm["findings"])
    assert any(c["rule"] == "host-guest-drops" and c["status"] == "pass" for c in vm["checks"])
    assert "counter reset" not in text and "reset during the window" not in str(vm)
    retransmits = next(f for f in vm["findings"] if f["rule"] == "guest-retransmits")
    assert "0.15% of 1,235,529 sent" in retransmits["summary"] and "wrapped" in retransmits["summary"]
    assert any("wrapped" in e["what"] for e in retransmits["evidence"])
    assert "4,294,448,425" not in str(retransmits)
    assert nic["ring_verdict"] == "raise-ring1" and nic["verdict"]["ledger"]["unexplained"] == 0


@pytest.mark.parametrize("name, target, moved", STEPPED)
def test_a_stepped_clock_keeps_the_capture_order_and_the_true_window(name, target, moved):
    _, vm, text = run(name)
    nic = vm["vnics"][0]
    assert_true_window(vm, nic, text)
    (step,) = [f for f in vm["findings"] if f["title"].startswith("Clock step")]
    assert step["rule"] == "data-quality" and target in step["title"] and moved in step["title"]
    bundle = Bundle.load(SITUATIONS / name)
    stamps = {(c.spec, c.sample): c.ended for c in bundle.captures if c.target == target and c.sample is not None}
    both = [(stamps[(spec, 0)], stamps[(spec, 1)]) for spec, n in stamps if n == 0 and (spec, 1) in stamps]
    assert any(first in step["summary"] and last in step["summary"] for first, last in both)
    assert "Clock step: the clock of " + target in text
    charts = {c["label"]: c["times"] for c in nic["charts"]}  # drawn in sample order, not an hour apart
    guest, host = "guest pkts rx OOB", "1st ring full"
    stepped, steady = (guest, host) if target == GUEST else (host, guest)
    assert charts[stepped] == [None, None] and all(charts[steady])


def test_a_steady_clock_reads_the_wrap_and_names_no_step():
    _, vm, text = run("clocks-steady-counter-wraps")
    assert_true_window(vm, vm["vnics"][0], text)
    assert not any(f["title"].startswith("Clock step") for f in vm["findings"])


@pytest.mark.parametrize("name", [n for n, _, _ in STEPPED])
def test_readings_come_in_sample_order_whatever_the_stamps(name):
    readings = Readings(Bundle.load(SITUATIONS / name))
    for spec, target in (("netstat_s", GUEST), ("ethtool_stats", GUEST), ("vsish_rxsummary", HOST)):
        assert [r.capture.sample for r in readings.samples(spec, target)] == [0, 1]
