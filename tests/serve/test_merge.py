"""Per-vCenter reports merged into one fleet report: the same as one scan of all of them would
give, stale and missing vCenters said first, and the FLEET table's renderers take it."""

from __future__ import annotations

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.merge import failed_status, merge_reports
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.reports.formats import FLEET, RenderContext
from esxdiag.reports.fleet_text import headline

HOSTILE = '<script>alert(1)</script>"x'


def merge(documents, missing=(), stale=None):
    return merge_reports(documents, list(missing), stale or {}, load_thresholds(), 300, {}).as_dict()


def two_vcenters(make_vm):
    return ({"vc1:443": [make_vm("ring01", "vm-1", drops=300), make_vm("slow", "vm-2", ready_ms=3000),
                         make_vm("calm", "vm-3")],
             "vc2:443": [make_vm("ring02", "vm-1", drops=30, host="esx9"), make_vm(HOSTILE, "vm-5", drops=900),
                         make_vm("old", "vm-6", nic="e1000")]})


def test_merge_equals_one_report_of_both_vcenters(fleet_document, make_vm):
    fleet = two_vcenters(make_vm)
    documents = [fleet_document(vc, vms) for vc, vms in fleet.items()]
    both = [dict(v, unmatched_filters=[]) for d in documents for v in d.as_dict()["vcenters"]]
    rows = [dict(v, vcenter=vc) for vc, vms in fleet.items() for v in vms]
    one = {"schema": "esxdiag.fleet_snapshot/1", "collected_at": "2026-11-23T02:45:00Z", "window_s": 300,
           "nic_types": "all", "filters": {}, "vcenters": both, "hosts": [], "vms": rows}
    combined = build_report(snapshot_from_dict(one), load_thresholds()).as_dict()
    merged = merge(documents)
    assert merged["vms"] == combined["vms"]
    assert merged["counts"] == combined["counts"] and merged["rollups"] == combined["rollups"]
    assert merged["not_scanned"] == [] and headline(merged) is None


def test_stale_and_never_scanned_vcenters_are_said_first(fleet_document, make_vm):
    fleet = two_vcenters(make_vm)
    documents = [fleet_document(vc, vms) for vc, vms in fleet.items()]
    stale = {"vc2:443": {"since": "2026-11-23T02:45:00Z", "error": "vc2:443: unreachable (refused)",
                         "error_kind": "unreachable"}}
    pending = failed_status("vc3:443", "https://vc3/sdk", "vc3:443: first cycle not finished yet", "pending")
    merged = merge(documents, [pending], stale)
    assert [m["vcenter"] for m in merged["not_scanned"]] == ["vc3:443", "vc2:443"]
    assert headline(merged).startswith("2 of 3 vCenters not scanned: vc3:443: first cycle not finished yet")
    assert {r["vcenter"] for r in merged["vms"]} == {"vc1:443", "vc2:443"}  # the stale one's VMs stay
    assert [v["status"] for v in merged["vcenters"]] == ["scanned", "stale", "failed"]
    html = FLEET.formats["html"].render(merged, RenderContext())
    assert "Its VMs below are from its last good scan, 2026-11-23T02:45:00Z (stale)." in html
    assert "vc3:443: first cycle not finished yet (pending).\nIts VMs are not in this report." in html


def test_no_report_yet_still_renders_every_format(make_vm):
    pending = failed_status("vc1:443", "https://vc1/sdk", "vc1:443: first cycle not finished yet", "pending")
    merged = merge([], [pending])
    assert merged["vms"] == [] and merged["counts"]["healthy"] == 0
    for name, fmt in FLEET.formats.items():
        assert "vc1:443" in fmt.render(merged, RenderContext()) or name in ("csv", "openmetrics")


def test_vm_pages_are_linked_from_the_fleet_page_and_names_stay_escaped(fleet_document, make_vm):
    fleet = two_vcenters(make_vm)
    merged = merge([fleet_document(vc, vms) for vc, vms in fleet.items()])
    html = FLEET.formats["html"].render(merged, RenderContext(vm_href=lambda r: f"vm/{r['vcenter']}/{r['moid']}"))
    assert '<a href="vm/vc2:443/vm-5">&lt;script&gt;alert(1)&lt;/script&gt;&#34;x</a>' in html
    assert "<script>alert" not in html
    assert 'href="vm/' not in FLEET.formats["html"].render(merged, RenderContext())  # scan's file: no such pages
