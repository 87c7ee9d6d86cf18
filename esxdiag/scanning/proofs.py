"""A proven ring exhaustion outlives the scan that proved it. A VM is not deep-checked in every
scan (serve checks it again only after --deep-recheck; `scan --deep N` checks the N worst now);
in the scans between, its vCenter counters alone would put it back to ring-suspect. So a deep
check whose verdict proves exhaustion is folded into each later scan's report (esxdiag.fleet
.confirm, as a fresh check is) while it is younger than --proof-max-age and the VM's vCenter
counters still show its drops (a drop class); once they show none, the proof is retired, and the
VM's row says so. The earlier checks come from serve's state, or from the history for `scan`."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Mapping

from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.confirm import PROVEN
from esxdiag.fleet.history import held_proofs_since
from esxdiag.scanning.deep import DeepCheck
from esxdiag.vocabulary import DROP_CLASSES


def proves_exhaustion(check: DeepCheck) -> bool:
    return any(v.get("verdict") in PROVEN for v in check.vnics)


def as_deep(check: DeepCheck) -> dict:
    """A kept check in the shape esxdiag.fleet.deep.fold gives build_report."""
    return {"verdicts": list(check.verdicts), "worst_severity": check.worst_severity, "report": check.report,
            "bundle": None, "error": check.error, "checked_at": check.checked_at,
            "vnics": [dict(v, causes=list(v.get("causes") or ())) for v in check.vnics]}


def proofs_in_history(path: str | Path, vcenters: list[str], now: float, max_age_s: float) -> dict:
    """(vCenter, MOID) -> the VM's newest deep check in the history younger than max_age_s on which
    its latest recorded class rests (a proof retired since is gone, as from serve's state)."""
    since = (datetime.fromtimestamp(now, timezone.utc) - timedelta(seconds=max_age_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {(row["vcenter"], row["moid"]): DeepCheck.of(row) for row in held_proofs_since(path, since)
            if row["vcenter"] in vcenters}


def keep_proofs(document: dict, snapshot, thresholds: dict, kept: Mapping[tuple[str, str], DeepCheck], now: float,
                max_age_s: float) -> set[tuple[str, str]]:
    """Fold the valid proofs of VMs not checked in this scan into ``document`` (kept: earlier
    checks by (vCenter, MOID)); the (vCenter, MOID) whose proof is retired because the drops are gone."""
    checked_now = {(v["vcenter"], v["moid"]) for v in (document.get("deep") or {}).get("vms", [])}
    rows = {(r["vcenter"], r["moid"]): r for r in document["vms"]}
    valid = {key: c for key, c in kept.items() if key in rows and key not in checked_now and
             proves_exhaustion(c) and now - c.checked_ts <= max_age_s}
    held = {key: c for key, c in valid.items() if rows[key]["class"] in DROP_CLASSES}
    if held:
        deep = {(v["vcenter"], v["moid"]): {k: x for k, x in v.items() if k not in ("vcenter", "name", "moid", "host")}
                for v in (document.get("deep") or {}).get("vms", [])}
        deep.update({key: as_deep(c) for key, c in held.items()})
        fresh = build_report(snapshot, thresholds, document["snapshot"]["file"], deep=deep)
        fresh.update(deep=document.get("deep"), changes=document.get("changes"))
        document.clear()
        document.update(fresh)
    for row in document["vms"]:
        key = (row["vcenter"], row["moid"])
        check = valid.get(key)
        if key in held:
            row["notes"].append(f"ring exhaustion proven {check.checked_at} by the deep check, kept while younger "
                                f"than {max_age_s:g} s (--proof-max-age) and the drops go on")
        elif check is not None:
            row["notes"].append(f"ring exhaustion proven {check.checked_at} retired: vCenter counters show no receive "
                                "drops in this window")
    return set(valid) - set(held)
