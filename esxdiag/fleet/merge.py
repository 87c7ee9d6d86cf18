"""Several fleet reports (one per vCenter, each from its own cycle) -> one fleet report, as if one
scan had seen them all: the same layout (docs/fleet-scan.md), so every renderer of the FLEET table
takes it. `esxdiag serve` shows its vCenters' last reports this way. No rule runs here: rows,
counts, rollups, deep checks and changes are the reports' own, put together and ranked again by the
order build_report ranks in (esxdiag.fleet.analysis.row_order; tests/serve/test_merge.py holds the
two equal).

vCenters without a report of their own (``missing``) are listed as not scanned, with why. A
vCenter whose last cycle failed but that has an older report is ``stale``: its rows stay, its entry
in ``not_scanned`` says since when (``stale_since``) and why. A vCenter whose first cycle has not
ended (``starting``) has failed nothing: its ``vcenters`` entry says ``starting``, and it is not
in ``not_scanned``.
"""

from __future__ import annotations

from collections.abc import Sequence

from esxdiag.fleet.analysis import build_report, rollup_order, row_order
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.vocabulary import FLEET_CLASSES, SCHEMA_SNAPSHOT


def failed_status(name: str, url: str, error: str, kind: str | None) -> dict:
    """The snapshot's vCenter entry for one that was not scanned."""
    return {"url": url, "name": name, "status": "failed", "error": error, "error_kind": kind, "requests": 0,
            "seconds": None, "max_query_metrics": None, "max_query_metrics_source": None, "vms": 0, "perf_errors": 0,
            "unmatched_filters": []}


def starting_status(name: str, url: str) -> dict:
    """The vCenter entry of one whose first cycle has not ended: not scanned yet, not failed."""
    return dict(failed_status(name, url, f"{name}: first cycle not finished yet", None), status="starting")


def merge_reports(documents: list[dict], missing: list[dict], stale: dict[str, dict], thresholds: dict,
                  window_s: float, filters: dict, starting: Sequence[dict] = ()) -> dict:
    """documents: one report per vCenter (its last good one); missing: failed_status entries of the
    vCenters without one; stale: vCenter name -> {"since", "error", "error_kind"} for documents
    whose vCenter's last cycle failed; starting: starting_status entries."""
    statuses = [{k: list(v) if isinstance(v, tuple) else v for k, v in d["vcenters"][0].items()}  # as in JSON
                for d in documents] + missing
    collected = sorted(d["snapshot"]["collected_at"] for d in documents)
    empty = {"schema": SCHEMA_SNAPSHOT, "collected_at": collected[0] if collected else "", "window_s": window_s,
             "nic_types": documents[0]["snapshot"]["nic_types"] if documents else "all", "filters": filters,
             "vcenters": statuses, "hosts": [], "vms": []}
    merged = build_report(snapshot_from_dict(empty), thresholds)  # every key a report has, with no VM in it
    rows = sorted((row for d in documents for row in d["vms"]), key=row_order)
    merged["vms"] = [dict(row, rank=rank) for rank, row in enumerate(rows, 1)]
    merged["counts"] = {c: sum(d["counts"].get(c, 0) for d in documents) for c in FLEET_CLASSES}
    merged["rollups"] = {kind: sorted((g for d in documents for g in d["rollups"][kind]), key=rollup_order)
                         for kind in ("clusters", "hosts")}
    merged["not_scanned"] += [{"vcenter": name, "url": d["vcenters"][0]["url"], "error": why["error"],
                               "error_kind": why["error_kind"], "stale_since": why["since"]}
                              for d in documents if (name := d["vcenters"][0]["name"]) in stale
                              for why in [stale[name]]]
    merged["vcenters"] = [dict(v, status="stale", error=f"last cycle failed: {stale[v['name']]['error']}; figures "
                               f"from its last good scan, {stale[v['name']]['since']}")
                          if v["name"] in stale else v for v in merged["vcenters"]] + list(starting)
    deep = [d["deep"] for d in documents if d.get("deep")]
    merged["deep"] = {"hosts": [h for x in deep for h in x["hosts"]], "vms": [v for x in deep for v in x["vms"]]} \
        if deep else None
    merged["changes"] = _changes([d["changes"] for d in documents if d.get("changes")])
    return merged


def _changes(parts: list[dict]) -> dict | None:
    if not parts:
        return None
    out = {"previous_at": min(p["previous_at"] for p in parts),
           "vcenters_compared": sorted({v for p in parts for v in p["vcenters_compared"]})}
    for key in ("new", "recovered", "changed", "gone"):
        out[key] = [item for p in parts for item in p[key]]
    return out
