"""Several fleet reports (one per vCenter, each from its own cycle) -> one fleet report, as if one
scan had seen them all: the same layout (docs/fleet-scan.md), so every renderer of the FLEET table
takes it. `esxdiag serve` shows its vCenters' last reports this way. No rule runs here: rows,
counts, rollups, deep checks and changes are the reports' own, put together and ranked again by the
order build_report ranks in (esxdiag.fleet.model.order_key; tests/serve/test_merge.py holds the
two equal).

vCenters without a report of their own (``missing``) are listed as not scanned, with why. A
vCenter whose last cycle failed but that has an older report is ``stale``: its rows stay, its entry
in ``not_scanned`` says since when (``stale_since``) and why. A vCenter whose first cycle has not
ended (``starting``) has failed nothing: its ``vcenters`` entry says ``starting``, and it is not
in ``not_scanned``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from esxdiag.fleet.analysis import made_under
from esxdiag.fleet.model import DeepSection, FleetReport, NotScanned, Rollup, SnapshotInfo, ranked
from esxdiag.fleet.snapshot import VcenterStatus
from esxdiag.vocabulary import FLEET_CLASSES


def failed_status(name: str, url: str, error: str, kind: str | None) -> VcenterStatus:
    """The vCenter entry of one that was not scanned."""
    return VcenterStatus(url=url, name=name, status="failed", error=error, error_kind=kind, requests=0, seconds=None,
                         max_query_metrics=None, max_query_metrics_source=None, vms=0, perf_errors=0,
                         unmatched_filters=())


def starting_status(name: str, url: str) -> VcenterStatus:
    """The vCenter entry of one whose first cycle has not ended: not scanned yet, not failed."""
    return dataclasses.replace(failed_status(name, url, f"{name}: first cycle not finished yet", None),
                               status="starting")


def merge_reports(reports: Sequence[FleetReport], missing: Sequence[VcenterStatus], stale: Mapping[str, Mapping],
                  thresholds: Mapping[str, float], window_s: float, filters: Mapping,
                  starting: Sequence[VcenterStatus] = ()) -> FleetReport:
    """reports: one per vCenter (its last good one); missing: failed_status entries of the vCenters without
    one; stale: vCenter name -> {"since", "error", "error_kind"} for reports whose vCenter's last cycle
    failed; starting: starting_status entries."""
    collected = sorted(r.snapshot.collected_at for r in reports)
    statuses = [r.vcenters[0] for r in reports]
    deep = [r.deep for r in reports if r.deep is not None]
    return FleetReport(
        **made_under(thresholds),
        snapshot=SnapshotInfo(file=None, collected_at=collected[0] if collected else "", window_s=window_s,
                              nic_types=reports[0].snapshot.nic_types if reports else "all", filters=filters,
                              notes=()),
        vcenters=(*(dataclasses.replace(v, status="stale", error=f"last cycle failed: {stale[v.name]['error']}; "
                                        f"figures from its last good scan, {stale[v.name]['since']}")
                    if v.name in stale else v for v in statuses), *missing, *starting),
        not_scanned=(*(NotScanned(v.name, v.url, v.error, v.error_kind) for v in missing),
                     *(NotScanned(v.name, v.url, why["error"], why["error_kind"], why["since"])
                       for v in statuses if v.name in stale for why in [stale[v.name]])),
        counts={c: sum(r.counts.get(c, 0) for r in reports) for c in FLEET_CLASSES},
        rows=ranked([row for r in reports for row in r.rows]),
        clusters=tuple(sorted((g for r in reports for g in r.clusters), key=Rollup.order)),
        hosts=tuple(sorted((g for r in reports for g in r.hosts), key=Rollup.order)),
        changes=_changes([r.changes for r in reports if r.changes]),
        deep=DeepSection(tuple(h for d in deep for h in d.hosts), tuple(v for d in deep for v in d.vms))
        if deep else None)


def _changes(parts: list[Mapping]) -> dict | None:
    if not parts:
        return None
    out = {"previous_at": min(p["previous_at"] for p in parts),
           "vcenters_compared": sorted({v for p in parts for v in p["vcenters_compared"]})}
    for key in ("new", "recovered", "changed", "gone"):
        out[key] = [item for p in parts for item in p[key]]
    return out
