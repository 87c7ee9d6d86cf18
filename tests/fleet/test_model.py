"""The fleet report is a frozen value made once its evidence is in (issue 31): nothing edits it after,
a later view (an expired proof, serve's merged page) is a new value, and its JSON is plain data whose
every row key docs/fleet-scan.md documents."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import Evidence, build_report, with_evidence
from esxdiag.fleet.model import ROW_FIELDS, DeepEvidence
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.scanning.proofs import expire, unproven_rows

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "fleet-scan.md"
CHECKED_AT = "2026-11-23T02:46:00Z"


def proof(mac: str, checked_at: str = CHECKED_AT) -> DeepEvidence:
    return DeepEvidence(verdicts=("raise-ring1",), worst_severity="warning", report=None, bundle=None, error=None,
                        checked_at=checked_at, vnics=({"label": "Network adapter 1", "mac": mac, "type": "vmxnet3",
                                                       "verdict": "raise-ring1", "causes": [], "ring1_full": 4.0,
                                                       "host_out_of_buffers": 5.0},))


def fleet():
    vms = [fs.vm("ring", drops=100), fs.vm("calm"), fs.vm("capped", ready=3100, limited=3000, limit=800)]
    snapshot = snapshot_from_dict(fs.snapshot(vms, hosts=[fs.host("esx1")]))
    return snapshot, vms


def test_the_report_is_frozen_and_its_json_is_plain_data():
    snapshot, vms = fleet()
    report = build_report(snapshot, load_thresholds(), "snap.json",
                          Evidence(checks={("vc1:443", vms[0]["moid"]): proof(vms[0]["vnics"][0]["mac"])}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.rows = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.rows[0].klass = "healthy"  # type: ignore[misc]
    document = report.as_dict()
    assert json.loads(json.dumps(document)) == document  # lists, dicts, strings, numbers, None: nothing else
    ring = next(r for r in document["vms"] if r["name"] == "ring")
    assert (ring["class"], ring["confirmed"], ring["deep"]["checked_at"]) == ("ring-exhaustion", True, CHECKED_AT)


def test_evidence_makes_a_new_report_and_the_first_stays_as_it_was():
    snapshot, vms = fleet()
    t = load_thresholds()
    first = build_report(snapshot, t, "snap.json")
    before = first.as_dict()
    key = ("vc1:443", vms[0]["moid"])
    proven = build_report(snapshot, t, "snap.json", Evidence(checks={key: proof(vms[0]["vnics"][0]["mac"])}))
    assert first.by_key[key].klass == "ring-suspect" and proven.by_key[key].klass == "ring-exhaustion"
    assert first.as_dict() | {"generated_at": None} == before | {"generated_at": None}


def test_an_expired_proof_is_a_new_report_ranked_again_and_the_shown_one_is_untouched():
    snapshot, vms = fleet()
    t = load_thresholds()
    key = ("vc1:443", vms[0]["moid"])
    old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 900))
    shown = build_report(snapshot, t, "snap.json", Evidence(checks={key: proof(vms[0]["vnics"][0]["mac"], old)}))
    after = expire(shown, unproven_rows(shown, snapshot, t), time.time(), 600)
    assert after is not shown and shown.by_key[key].klass == "ring-exhaustion"
    assert after.by_key[key].klass == "ring-suspect" and after.by_key[key].deep is None
    assert [r.rank for r in after.rows] == [1, 2, 3] and after.counts["ring-exhaustion"] == 0
    assert any("expired" in n for n in after.by_key[key].notes)


def test_every_row_key_of_the_json_is_in_the_documented_layout():
    text = DOCS.read_text(encoding="utf-8")
    block = text[text.index('"vms": [{'):text.index('"rollups":')]
    documented = set(re.findall(r'"([a-z0-9_]+)"', block))
    assert {key for key, _ in ROW_FIELDS} | {"deep"} <= documented


def _check(kind: str, mac: str) -> DeepEvidence:
    if kind == "proof":
        return proof(mac)
    if kind == "failed":
        return DeepEvidence(verdicts=(), vnics=(), worst_severity=None, report=None, bundle=None,
                            error="host esx1 not reached", checked_at=None)
    return DeepEvidence(verdicts=("cpu-first",), worst_severity="critical", report="r.html", bundle="b", error=None,
                        checked_at=CHECKED_AT, vnics=({"label": "Network adapter 1", "mac": mac, "type": "vmxnet3",
                                                       "verdict": "cpu-first", "causes": []},))


FLEET_VMS = [fs.vm("ring", drops=100), fs.vm("calm"), fs.vm("capped", ready=3100, limited=3000, limit=800),
             fs.vm("busy-ring", ready=2500, drops=400), fs.vm("old-nic", drops=300, nics=("e1000",)),
             fs.vm("off", power="poweredOff"), fs.vm("two", drops={"4000": 50, "4001": 0}, nics=("vmxnet3", "vmxnet3")),
             fs.vm("elsewhere", host="esx2", drops=20)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(FLEET_VMS) - 1), st.sampled_from(["proof", "failed", "cpu", None]),
                          st.booleans()), max_size=5),
       st.booleans())
def test_evidence_judged_for_the_vms_it_names_gives_the_whole_fleet_judged_again(picks, lossy_uplink):
    """esxdiag.fleet.analysis.with_evidence (a scan's second report, judging only the VMs its evidence names)
    equals build_report of the whole snapshot with that evidence, ranks, counts and rollups included."""
    hosts = [fs.host("esx1", drops={"vmnic0": 40} if lossy_uplink else None), fs.host("esx2")]
    snapshot = snapshot_from_dict(fs.snapshot(FLEET_VMS, hosts=hosts))
    t = load_thresholds()
    checks, notes = {}, {}
    for index, kind, noted in picks:
        vm = FLEET_VMS[index]
        key = ("vc1:443", vm["moid"])
        if kind is not None:
            checks[key] = _check(kind, vm["vnics"][0]["mac"])
        if noted:
            notes[key] = (f"kept proof of {vm['name']}",)
    evidence = Evidence(checks=checks, notes=notes)
    first = build_report(snapshot, t, "snap.json")
    judged_again = with_evidence(first, snapshot, t, evidence).as_dict()
    whole = build_report(snapshot, t, "snap.json", evidence).as_dict()
    assert judged_again | {"generated_at": None} == whole | {"generated_at": None}
