"""Uplink loss (issue 22, point a): frames a host's physical NIC drops or rejects never reach a VM's
port, so a lossy uplink is one finding for every VM on the host, not N ring suspects. Synthetic
snapshots: hosts with per-vmnic net.droppedRx / net.errorsRx as a real vCenter answers instance "*",
or the aggregate alone as vcsim does, or without net.errorsRx as snapshots written before it."""

from __future__ import annotations

import csv
import importlib.util
import io
from pathlib import Path

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report, deep_candidates
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.reports.fleet_csv import render_fleet_csv
from esxdiag.reports.fleet_html import render_fleet_html
from esxdiag.reports.fleet_text import render_fleet_text

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)

# esx0's vmnic1: 124 drops + 2 errors per 20 s sample = 6.20 + 0.10 frames/s; vmnic0 clean
LOSSY = fs.host("esx0", drops={"vmnic0": 0, "vmnic1": 124}, errors={"vmnic0": 0, "vmnic1": 2})
WORDS = "uplink loss on esx0 vmnic1: 6.30 received frames/s lost (droppedRx 6.20/s, errorsRx 0.10/s)"
FLEET = [
    fs.vm("calm", host="esx0"),  # nothing of its own
    fs.vm("ring", drops=100, host="esx0"),  # its own port drops: 5/s on a vmxnet3 vNIC
    fs.vm("capped", ready=3100, limited=3000, limit=800, host="esx0"),  # a critical CPU limit, no drops
    fs.vm("off", power="poweredOff", host="esx0"),
    fs.vm("elsewhere", host="esx1"),
]


def report(vms=FLEET, hosts=(LOSSY, fs.host("esx1")), overrides=()) -> dict:
    return fs.ReportJson(build_report(snapshot_from_dict(fs.snapshot([dict(v) for v in vms], hosts=list(hosts))),
                                      load_thresholds(None, list(overrides))))


def rows(document: dict) -> dict[str, dict]:
    return {r["name"]: r for r in document["vms"]}


def test_a_vm_with_nothing_of_its_own_on_a_lossy_host_is_uplink_loss_at_info_not_a_ring_suspect():
    calm = rows(report())["calm"]
    assert (calm["class"], calm["severity"], calm["confirmed"]) == ("uplink-loss", "info", False)
    assert calm["reason"].startswith(f"{WORDS}: before the vSwitch, not the ring, and not seen at this VM's port "
                                     "(the host's finding, in its rollup); the VM itself: no receive drops, CPU healthy")
    assert "vmnic0" not in calm["reason"]  # the clean uplink is not named
    assert calm["uplink_loss"] == [{"host": "esx0", "vmnic": "vmnic1", "per_s": 6.3, "drops_per_s": 6.2,
                                    "errors_per_s": 0.1}]
    assert calm["score"] == 0 and calm["score_terms"] == {}  # no symptom of its own: the host rollup ranks the loss


def test_own_port_drops_keep_their_class_and_the_reason_names_the_uplink():
    document = report()
    ring = rows(document)["ring"]
    assert (ring["class"], ring["severity"]) == ("ring-suspect", "warning")
    assert f"its host also loses frames: {WORDS}: not the ring, and not in the VM's port drops" in ring["reason"]
    assert [r.name for r in deep_candidates(document.report, 10)] == ["ring"]  # the ring suspect only


def test_a_more_urgent_class_of_its_own_stays_and_names_the_uplink():
    by = rows(report())
    assert (by["capped"]["class"], by["capped"]["severity"]) == ("cpu-limit", "critical")
    assert f"its host also loses frames: {WORDS}" in by["capped"]["reason"]
    assert (by["off"]["class"], by["off"]["uplink_loss"]) == ("no-data", [])  # powered off: nothing to lose
    assert (by["elsewhere"]["class"], by["elsewhere"]["uplink_loss"]) == ("healthy", [])


def test_the_host_rollup_states_the_uplink_loss_once_in_every_output():
    document = report()
    hosts = {h["name"]: h for h in document["rollups"]["hosts"]}
    assert hosts["esx0"]["uplink"] == f"{WORDS}: before the vSwitch, not the ring: one finding for the host, not one " \
        "per VM on it"
    assert hosts["esx0"]["uplink_loss_per_s"] == 6.3 and hosts["esx1"]["uplink_loss_per_s"] is None
    assert (hosts["esx0"]["pnic_drops_per_s"], hosts["esx0"]["pnic_errors_per_s"]) == (6.2, 0.1)
    assert hosts["esx0"]["counts"]["uplink-loss"] == 1 and hosts["esx1"]["uplink"] is None
    text = render_fleet_text(document)
    assert text.count(hosts["esx0"]["uplink"]) == 1 and "Uplink loss on 1 host" in text
    html = render_fleet_html(document)
    assert 'id="uplink-loss"' in html and "vmnic1 6.300/s" in html
    table = {r["name"]: r for r in csv.DictReader(io.StringIO(render_fleet_csv(document)))}
    assert (table["calm"]["class"], table["calm"]["uplink_loss_per_s"], table["elsewhere"]["uplink_loss_per_s"]) == (
        "uplink-loss", "6.3", "")


def test_the_floor_is_a_threshold_key():
    """1 drop per 20 s sample on vmnic1 is 0.05/s: under the 0.1/s floor, over a floor of 0.01."""
    trickle = [fs.host("esx0", drops={"vmnic1": 1})]
    assert rows(report(hosts=trickle))["calm"]["class"] == "healthy"
    moved = report(hosts=trickle, overrides=["fleet.uplink_drops_per_s_floor=0.01"])
    assert rows(moved)["calm"]["class"] == "uplink-loss"
    assert moved["thresholds"]["fleet.uplink_drops_per_s_floor"] == 0.01


def test_loss_above_the_critical_rate_is_still_info_for_a_vm_that_drops_nothing():
    flood = [fs.host("esx0", drops={"vmnic1": 400})]  # 20/s > ring.drops_per_s_critical 10
    document = report(hosts=flood)
    assert rows(document)["calm"]["severity"] == "info"
    assert {h["name"]: h for h in document["rollups"]["hosts"]}["esx0"]["uplink_loss_per_s"] == 20.0


def test_an_aggregate_without_vmnics_is_said_so_and_vmnics_win_over_the_aggregate():
    aggregate = rows(report(hosts=[fs.host("esx0", drops={"": 124}, errors={"": 0})]))["calm"]
    assert aggregate["class"] == "uplink-loss"
    assert aggregate["reason"].startswith("uplink loss on esx0 (which vmnic is not known: vCenter gave the host's "
                                          "aggregate only): 6.20 received frames/s lost")
    both = rows(report(hosts=[fs.host("esx0", drops={"": 124, "vmnic1": 124})]))["calm"]
    assert both["uplink_loss"][0]["vmnic"] == "vmnic1" and both["uplink_loss"][0]["per_s"] == 6.2  # not doubled


def test_a_snapshot_without_errors_rx_is_read_and_says_so():
    """Snapshots written before issue 22 asked hosts for net.droppedRx only."""
    calm = rows(report(hosts=[fs.host("esx0", drops={"vmnic1": 124})]))["calm"]
    assert calm["class"] == "uplink-loss" and "(droppedRx 6.20/s, errorsRx not read)" in calm["reason"]
    assert calm["uplink_loss"][0]["errors_per_s"] is None


def test_errors_alone_are_uplink_loss():
    calm = rows(report(hosts=[fs.host("esx0", drops={"vmnic2": 0}, errors={"vmnic2": 40})]))["calm"]
    assert calm["class"] == "uplink-loss" and "vmnic2: 2.00 received frames/s lost (droppedRx 0.00/s, " \
        "errorsRx 2.00/s)" in calm["reason"]


# --- issue 29 item 10: a lossy host is one row of the host rollup, not N critical VM rows ------------------

def _crowd(n: int = 40, host: str = "esx0") -> list[dict]:
    return [fs.vm(f"quiet{i:02d}", host=host) for i in range(n)]


def test_forty_quiet_vms_on_a_lossy_host_are_none_above_info_and_the_host_is_one_row_with_its_rate():
    flood = fs.host("esx0", drops={"vmnic0": 0, "vmnic1": 400}, errors={"vmnic0": 0, "vmnic1": 0})  # 20/s
    document = report(vms=_crowd(), hosts=[flood, fs.host("esx1")])
    assert {(r["class"], r["severity"]) for r in document["vms"]} == {("uplink-loss", "info")}
    assert all(r["score"] == 0 for r in document["vms"])
    lossy = [h for h in document["rollups"]["hosts"] if h["uplink"]]
    assert [(h["name"], h["uplink_loss_per_s"]) for h in lossy] == [("esx0", 20.0)]
    assert lossy[0]["concern"] == 1  # the host's own finding, once; none of its symptomless VMs
    text = render_fleet_text(document)
    assert text.count("uplink loss on esx0 vmnic1") == 1  # said once, in the host section
    assert "Top 0 of 0 VMs" not in text and "quiet00" not in text.split("Uplink loss on")[0]
    assert "critical" not in text.split("Uplink loss on")[0]


def test_a_vm_dropping_on_the_lossy_host_names_the_uplink_and_keeps_its_own_severity():
    flood = fs.host("esx0", drops={"vmnic1": 400})  # 20/s: critical if it were the VM's own
    dropping = fs.vm("dropping", drops=60, host="esx0")  # 3/s of its own on a vmxnet3 vNIC: warning
    by = rows(report(vms=_crowd() + [dropping], hosts=[flood]))
    assert (by["dropping"]["class"], by["dropping"]["severity"]) == ("ring-suspect", "warning")
    assert "its host also loses frames: uplink loss on esx0 vmnic1: 20.00 received frames/s lost" in \
        by["dropping"]["reason"]
    heavy = rows(report(vms=[fs.vm("heavy", drops=400, host="esx0")], hosts=[flood]))["heavy"]
    assert heavy["severity"] == "critical" and "uplink loss on esx0 vmnic1" in heavy["reason"]  # 20/s of its own


def test_a_vm_really_dropping_ranks_above_the_quiet_ones_of_a_lossy_host():
    flood = fs.host("esx0", drops={"vmnic1": 400})
    elsewhere = fs.vm("trickle", drops=4, host="esx1")  # 0.2/s of its own, on a clean host
    document = report(vms=_crowd() + [fs.vm("dropping", drops=60, host="esx0"), elsewhere],
                      hosts=[flood, fs.host("esx1")])
    order = [r["name"] for r in document["vms"]]
    assert order.index("dropping") < order.index("quiet00") and order.index("trickle") < order.index("quiet00")
    assert [r.name for r in deep_candidates(document.report, 50)] == ["dropping", "trickle"]
    html = render_fleet_html(document)
    top = html.split('<h2 id="top">')[1].split('<h2 id="all-vms">')[0]
    assert "dropping" in top and "trickle" in top and "quiet00" not in top  # the top rows: VMs with a symptom
    assert "2 of 2 VMs needing attention" in top


def test_lossy_hosts_are_ranked_by_their_loss_rate():
    hosts = [fs.host("esx0", drops={"vmnic1": 10}), fs.host("esx1", drops={"vmnic2": 300}), fs.host("esx2")]
    vms = _crowd(3, "esx0") + [fs.vm("one", host="esx1"), fs.vm("two", host="esx2")]
    document = report(vms=vms, hosts=hosts)
    ranked = [h["name"] for h in document["rollups"]["hosts"]]
    assert ranked[:2] == ["esx1", "esx0"]  # 15/s before 0.5/s, however many VMs each has
    text = render_fleet_text(document)
    assert text.index("uplink loss on esx1") < text.index("uplink loss on esx0")


def test_a_host_starting_to_lose_frames_makes_no_new_suspects_of_its_quiet_vms(tmp_path):
    from esxdiag.fleet.history import changes_and_record

    db = tmp_path / "h.sqlite"
    vms = _crowd(5) + [fs.vm("dropping", drops=60, host="esx0")]
    assert changes_and_record(db, report(vms=vms, hosts=[fs.host("esx0")])) is None
    changes = changes_and_record(db, report(vms=vms, hosts=[fs.host("esx0", drops={"vmnic1": 400})]))
    assert changes["new"] == [] and changes["recovered"] == []
    assert {c["name"] for c in changes["changed"]} == {f"quiet{i:02d}" for i in range(5)}  # healthy -> uplink-loss
