"""Issue 29, item 1 and item 7: every port drop accounted for. The bundles are built by
tests/fixtures/situations/build_ledger.py from the lab's ring-exhaustion example: a drop reason in an
ESXi 8 spelling explains every drop; a reason no family knows; drops explained in part or not at all;
a handful of drops under the noise floor."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.parsers import to_jsonable
from esxdiag.reports.html import render_html
from esxdiag.reports.text import render_text

SITUATIONS = Path(__file__).resolve().parents[1] / "fixtures" / "situations"


def run(name: str):
    result = analyze(SITUATIONS / name, dict(DEFAULT_THRESHOLDS))
    doc = to_jsonable(result)
    return result, doc, doc["vms"][0]["vnics"][0], " ".join(render_text(result, width=200).split())


@pytest.mark.parametrize("name, label, added, family", [
    ("esxi8-large-inner-headers", "# of pkts dropped due to large inner (encap) hdrs", 3_150, "large-headers"),
    ("esxi8-packet-aging", "aggregate number of times packets are dropped by PktAgingList", 880, "packet-aging"),
    ("esxi8-rx-try-lock", "number of times packets are dropped by rx try lock queueing", 415, "rx-lock-queueing"),
    ("unknown-drop-reason", "number of packets dropped by uplink filter policy", 2_020, "unknown"),
])
def test_a_drop_reason_in_any_spelling_explains_the_port_drops(name, label, added, family):
    result, doc, nic, text = run(name)
    assert nic["ring_verdict"] == "drops-elsewhere"
    assert family in nic["verdict"]["causes"]
    assert label in nic["verdict"]["summary"] and f"{added:,}" in nic["verdict"]["summary"]
    ledger = nic["verdict"]["ledger"]
    assert ledger["port_drops"] == added and ledger["unexplained"] == 0 and ledger["explained"] == added
    (line,) = [x for x in ledger["lines"] if x["locator"] == label]
    assert line["cause"] == family and line["counted"] and line["delta"] == added
    assert "Every drop is accounted for" in ledger["words"]
    assert "NO RING CHANGE NEEDED" not in text and "No ring-full events or out-of-buffer drops in the window: keep" \
        not in text
    finding = next(f for f in doc["vms"][0]["findings"] if f["rule"] == "vmxnet3-drop-reasons")
    assert label in finding["summary"]
    assert not any(c["rule"] == "vmxnet3-drop-reasons" and c["status"] == "pass" for c in doc["vms"][0]["checks"])
    assert "just outside the window" not in text  # clientStats was read at both ends of exactly this window
    assert "ledger: The port dropped" in text
    assert "Drop ledger" in render_html(result)


def test_drops_explained_in_part_say_the_residue():
    _, _, nic, text = run("drops-partly-unexplained")
    ledger = nic["verdict"]["ledger"]
    assert (ledger["port_drops"], ledger["explained"], ledger["unexplained"]) == (3_150, 1_950, 1_200)
    assert nic["ring_verdict"] == "drops-elsewhere"
    assert "1,200 of 3,150 port drops are not explained by any counter read" in nic["verdict"]["summary"]
    assert "1,200 of 3,150 drops are not explained" in text


def test_port_drops_no_counter_explains_are_never_an_all_clear():
    _, doc, nic, text = run("drops-unexplained")
    assert nic["ring_verdict"] == "insufficient-evidence"
    assert nic["verdict"]["ledger"]["unexplained"] == 3_150
    assert "3,150 of 3,150 drops are not explained by any counter read" in nic["verdict"]["summary"]
    assert "esxcli network nic stats get" in nic["verdict"]["summary"]  # what to collect next
    assert not nic["verdict"]["remediation"]  # no ring change, no guessed cause
    assert "NO RING CHANGE NEEDED" not in text and "keep the default rings" not in text


def test_a_handful_of_drops_under_the_floor_is_not_exhaustion():
    _, doc, nic, text = run("drops-under-floor")
    assert nic["ring_verdict"] == "not-needed"
    summary = nic["verdict"]["summary"]
    assert "3 dropped in 63 s" in summary and "per million" in summary and "noise floor" in summary
    assert not nic["verdict"]["remediation"]
    assert not any(f["rule"] == "ring-exhaustion" for f in doc["vms"][0]["findings"])
    assert "RAISE RX RING" not in text and "RX ring exhaustion now" not in text


def test_the_floor_is_a_threshold_the_admin_can_move():
    t = {**DEFAULT_THRESHOLDS, "ring.drops_per_s_floor": 0.01}
    result = analyze(SITUATIONS / "drops-under-floor", t)
    assert result.vms[0].vnics[0].ring_verdict == "raise-ring1"
