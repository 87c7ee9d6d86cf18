"""The deep check's newer ring verdicts fold honestly (issue 22, point c): drops-elsewhere (ring counters
flat; its causes say where the drops are), memory-first and guest-saturated are never ring exhaustion.
The verdicts come as the fold gives them (esxdiag.fleet.deep: vnics[].verdict and .causes), on
synthetic snapshots; the last test runs the fold itself on a result whose verdicts carry causes."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import esxdiag.fleet.deep as deep_module
from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)


def judged(vnics: list[dict], drops: int = 100, **vm) -> dict:
    """The row of one VM (a vmxnet3 ring suspect at drops per sample) once its deep check says `vnics`."""
    one = fs.vm("checked", drops=drops, **vm)
    macs = [n["mac"] for n in one["vnics"]]
    check = {"verdicts": [v["verdict"] for v in vnics], "error": None, "worst_severity": "warning",
             "vnics": [{"label": None, "mac": macs[i], "type": "vmxnet3", **v} for i, v in enumerate(vnics)]}
    (row,) = build_report(snapshot_from_dict(fs.snapshot([one])), load_thresholds(),
                          evidence=fs.evidence_of({("vc1:443", "vm-checked"): check})).as_dict()["vms"]
    return row


def test_drops_elsewhere_at_the_uplink_is_uplink_loss_never_ring_exhaustion():
    row = judged([{"verdict": "drops-elsewhere", "causes": ["uplink"]}])
    assert (row["class"], row["severity"], row["confirmed"]) == ("uplink-loss", "warning", True)
    assert row["reason"].startswith("host counters say the drops are at the uplink (drops-elsewhere: uplink on "
                                    "vmxnet3 vNIC Network adapter 1")
    assert "not the ring" in row["reason"] and "vCenter: 1,500 receive drops" in row["reason"]


@pytest.mark.parametrize("causes, said", [
    (["mtu", "page-absent"], "the drops are mtu, page-absent"),
    (["steering", "burst-queue"], "the drops are steering, burst-queue"),
])
def test_drops_elsewhere_elsewhere_is_drops_not_ring_with_its_causes(causes, said):
    row = judged([{"verdict": "drops-elsewhere", "causes": causes}], drops=300)  # 15/s: a critical suspicion
    assert (row["class"], row["severity"], row["confirmed"]) == ("drops-not-ring", "critical", True)
    assert row["reason"].startswith(f"ring exhaustion ruled out by host counters: {said} (drops-elsewhere on ")


def test_drops_elsewhere_from_a_result_without_causes_still_folds():
    """A deep result written before verdicts had causes has no "causes" key (read with .get())."""
    row = judged([{"verdict": "drops-elsewhere"}])
    assert (row["class"], row["confirmed"]) == ("drops-not-ring", True)
    assert "the drops are elsewhere (the deep check named no cause)" in row["reason"]


def test_ruled_out_on_every_vnic_clears_the_suspicion():
    row = judged([{"verdict": "past-exhaustion-only", "causes": []}, {"verdict": "not-needed", "causes": []}],
                 nics=("vmxnet3", "vmxnet3"))
    assert (row["class"], row["severity"], row["confirmed"]) == ("healthy", None, True)
    assert "ring exhaustion ruled out by host counters (past-exhaustion-only, not-needed on " in row["reason"]


@pytest.mark.parametrize("verdict, fix", [("memory-first", "fix memory first"), ("guest-saturated", "fix CPU first")])
def test_memory_first_and_guest_saturated_are_cpu_and_drops_never_ring_exhaustion(verdict, fix):
    row = judged([{"verdict": verdict}])
    assert (row["class"], row["severity"], row["confirmed"]) == ("cpu-and-drops", "critical", True)
    assert row["reason"].startswith(f"host counters say {verdict} on vmxnet3 vNIC Network adapter 1")
    assert fix in row["reason"] and "not ring exhaustion" in row["reason"]


def test_proof_on_one_vnic_wins_over_drops_elsewhere_on_another():
    row = judged([{"verdict": "raise-ring1"}, {"verdict": "drops-elsewhere", "causes": ["uplink"]}],
                 nics=("vmxnet3", "vmxnet3"))
    assert (row["class"], row["confirmed"]) == ("ring-exhaustion", True)


def test_ruled_out_on_one_vnic_and_an_mtu_mismatch_on_another_is_drops_not_ring():
    row = judged([{"verdict": "not-needed"}, {"verdict": "drops-elsewhere", "causes": ["mtu"]}],
                 nics=("vmxnet3", "vmxnet3"))
    assert (row["class"], row["confirmed"]) == ("drops-not-ring", True) and "the drops are mtu" in row["reason"]


@dataclass
class _Verdict:
    causes: tuple[str, ...] = ()


@dataclass
class _Vnic:
    label: str
    mac: str
    type: str
    ring_verdict: str
    verdict: object = field(default_factory=_Verdict)
    metrics: dict = field(default_factory=dict)  # no ring figures measured


@dataclass
class _Vm:
    name: str
    vnics: list

    def worst_severity(self) -> str:
        return "warning"


@dataclass
class _Result:
    vms: list


@dataclass
class _Group:
    vcenter: str
    host: str
    vms: list
    bundle: Path
    error: str | None = None


def test_the_fold_hands_each_vnics_causes_to_the_rules(tmp_path, monkeypatch):
    """esxdiag.fleet.deep.fold reads `causes` off each vNIC's verdict (getattr: a result model without the
    field gives none), so a drops-elsewhere at the uplink becomes uplink-loss in the folded report."""
    vm = fs.vm("checked", drops=100)
    snapshot = snapshot_from_dict(fs.snapshot([vm]))
    first = build_report(snapshot, load_thresholds(), "snap.json")
    bundle = tmp_path / "esx1"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps({}))
    result = _Result([_Vm("checked", [_Vnic("Network adapter 1", vm["vnics"][0]["mac"], "vmxnet3",
                                            "drops-elsewhere", _Verdict(("uplink",)))])])
    monkeypatch.setattr(deep_module, "analyze", lambda path, thresholds: result)
    evidence = deep_module.fold([_Group("vc1:443", "esx1", [first.rows[0]], bundle)], load_thresholds(), tmp_path,
                                lambda result, path: path / "report.html")
    (row,) = build_report(snapshot, load_thresholds(), "snap.json", evidence).as_dict()["vms"]
    assert row["deep"]["vnics"][0]["causes"] == ["uplink"]
    assert (row["class"], row["confirmed"]) == ("uplink-loss", True)
