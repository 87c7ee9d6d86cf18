"""A proven ring exhaustion outlives the cycle that proved it. A VM is deep-checked again only
after --deep-recheck; in the cycles between, its vCenter counters alone would put it back to
ring-suspect. So a deep check whose verdict proves exhaustion is folded into each later cycle's
report (esxdiag.fleet.confirm, as a fresh check is) while it is younger than --proof-max-age and
the VM's vCenter counters still show its drops (a drop class); once they show none, the proof is
retired, and the VM's row says so."""

from __future__ import annotations

from typing import Mapping

from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.confirm import PROVEN
from esxdiag.serve.state import DeepCheck
from esxdiag.vocabulary import DROP_CLASSES


def proves_exhaustion(check: DeepCheck) -> bool:
    return any(v.get("verdict") in PROVEN for v in check.vnics)


def as_deep(check: DeepCheck) -> dict:
    """A kept check in the shape esxdiag.fleet.deep.fold gives build_report."""
    return {"verdicts": list(check.verdicts), "worst_severity": check.worst_severity, "report": check.report,
            "bundle": None, "error": check.error, "checked_at": check.checked_at,
            "vnics": [{"label": v.get("label"), "mac": v.get("mac"), "type": v.get("type"), "verdict": v.get("verdict"),
                       "causes": list(v.get("causes") or ())} for v in check.vnics]}


def keep_proofs(document: dict, snapshot, thresholds: dict, kept: Mapping[str, DeepCheck], now: float,
                max_age_s: float) -> set[str]:
    """Fold the valid proofs of VMs not checked in this cycle into ``document``; the MOIDs whose
    proof is retired because the VM's drops are gone."""
    vcenter = document["vcenters"][0]["name"]
    checked_now = {v["moid"] for v in (document.get("deep") or {}).get("vms", [])}
    rows = {r["moid"]: r for r in document["vms"]}
    valid = {moid: c for moid, c in kept.items() if moid in rows and moid not in checked_now and
             proves_exhaustion(c) and now - c.checked_ts <= max_age_s}
    held = {moid: c for moid, c in valid.items() if rows[moid]["class"] in DROP_CLASSES}
    if held:
        deep = {(vcenter, v["moid"]): {k: x for k, x in v.items() if k not in ("name", "moid", "host")}
                for v in (document.get("deep") or {}).get("vms", [])}
        deep.update({(vcenter, moid): as_deep(c) for moid, c in held.items()})
        fresh = build_report(snapshot, thresholds, document["snapshot"]["file"], deep=deep)
        fresh.update(deep=document.get("deep"), changes=document.get("changes"))
        document.clear()
        document.update(fresh)
    for row in document["vms"]:
        check = valid.get(row["moid"])
        if row["moid"] in held:
            row["notes"].append(f"ring exhaustion proven {check.checked_at} by the deep check, kept while younger "
                                f"than {max_age_s:g} s (--proof-max-age) and the drops go on")
        elif check is not None:
            row["notes"].append(f"ring exhaustion proven {check.checked_at} retired: vCenter counters show no receive "
                                "drops in this window")
    return set(valid) - set(held)
