"""A deep check's proof outlives the scan that made it. A VM is not deep-checked in every scan
(serve checks it again only after --deep-recheck; `scan --deep N` checks the N worst now); in the
scans between, its vCenter counters alone would put it back to a suspicion. So a deep check whose
verdicts decide the VM's class (esxdiag.fleet.confirm: ring exhaustion proven, CPU or memory first,
the drops elsewhere or ruled out) is folded into each later scan's report, as a fresh check is,
while it is younger than --proof-max-age and the VM's vCenter counters still show the drops it
answered. Every provable class keeps its proof the same way.

Only counters that were read retire a proof: a scan that read the VM's receive-drop counters and
found no drops over the noise floor (or found the VM powered off) retires it, with a note; a scan
that could not read them (QueryPerf failed, no series returned) keeps it and says so. A proof's age
is checked whenever it is shown (``expire``): serve shows its last good report while its vCenter
fails, and a proof in it older than --proof-max-age is taken out then, not at the next good cycle.
The earlier checks come from serve's state, or from the history for `scan`.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Mapping

from esxdiag.fleet.analysis import build_report, with_rows
from esxdiag.fleet.confirm import DECIDING, PROVEN
from esxdiag.fleet.history import held_proofs_since
from esxdiag.scanning.deep import DeepCheck

Key = tuple[str, str]  # (vCenter, MOID)


def proves_exhaustion(check: DeepCheck) -> bool:
    return any(v.get("verdict") in PROVEN for v in check.vnics)


def decides(check: DeepCheck) -> bool:
    """The check's verdicts decide the VM's class (a proof of ring exhaustion, of CPU or memory
    first, of drops elsewhere or none): it is kept like any other proof."""
    return not check.error and any(v.get("verdict") in DECIDING for v in check.vnics)


def proof_words(check: DeepCheck) -> str:
    """What the check proved, for the notes."""
    if proves_exhaustion(check):
        return f"ring exhaustion proven {check.checked_at}"
    return f"{', '.join(dict.fromkeys(check.verdicts))} proven {check.checked_at}"


def as_deep(check: DeepCheck) -> dict:
    """A kept check in the shape esxdiag.fleet.deep.fold gives build_report."""
    return {"verdicts": list(check.verdicts), "worst_severity": check.worst_severity, "report": check.report,
            "bundle": None, "error": check.error, "checked_at": check.checked_at,
            "vnics": [dict(v, causes=list(v.get("causes") or ())) for v in check.vnics]}


def checked_ts(checked_at: str) -> float:
    return datetime.strptime(checked_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def proofs_in_history(path: str | Path, vcenters: list[str], now: float, max_age_s: float) -> dict:
    """(vCenter, MOID) -> the VM's newest deep check in the history younger than max_age_s that no
    scan has retired (a proof retired since is gone, as from serve's state)."""
    since = (datetime.fromtimestamp(now, timezone.utc) - timedelta(seconds=max_age_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {(row["vcenter"], row["moid"]): DeepCheck.of(row) for row in held_proofs_since(path, since)
            if row["vcenter"] in vcenters}


def unread_why(row: dict, vm) -> str | None:
    """Why this scan did not read the VM's receive-drop counters (None: it read them, or the VM is
    not running)."""
    if row["power_state"] != "poweredOn" or row["drops"] is not None:
        return None
    return (vm.perf_error if vm is not None and vm.perf_error else None) or "no receive-drop figures returned"


def keep_proofs(document: dict, snapshot, thresholds: dict, kept: Mapping[Key, DeepCheck], now: float,
                max_age_s: float) -> dict[Key, DeepCheck]:
    """Fold the valid proofs of VMs not checked in this scan into ``document`` (kept: earlier
    checks by (vCenter, MOID)); the proofs this scan retired, by (vCenter, MOID): the VM's counters
    were read and show no drops over the noise floor, or it is not running."""
    checked_now = {(v["vcenter"], v["moid"]) for v in (document.get("deep") or {}).get("vms", [])}
    rows = {(r["vcenter"], r["moid"]): r for r in document["vms"]}
    vms = {(v.vcenter, v.moid): v for v in snapshot.vms}
    valid = {key: c for key, c in kept.items() if key in rows and key not in checked_now and decides(c)
             and now - c.checked_ts <= max_age_s}
    unread = {key: why for key in valid if (why := unread_why(rows[key], vms.get(key))) is not None}
    held = {key: c for key, c in valid.items() if key in unread or rows[key]["dropping"]}
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
        if check is None:
            continue
        if key in unread:
            row["notes"].append(f"{proof_words(check)} by the deep check, kept: this scan could not read the VM's "
                                f"receive-drop counters ({unread[key]}); only counters that were read retire it "
                                f"(kept while younger than {max_age_s:g} s, --proof-max-age)")
        elif key in held:
            row["notes"].append(f"{proof_words(check)} by the deep check, kept while younger than {max_age_s:g} s "
                                "(--proof-max-age) and the drops go on")
        elif row["power_state"] != "poweredOn":
            row["notes"].append(f"{proof_words(check)} retired: the VM is not running")
        else:
            row["notes"].append(f"{proof_words(check)} retired: vCenter counters show no receive drops over the "
                                "noise floor in this window")
    return {key: c for key, c in valid.items() if key not in held}


def shown_until(document: dict, max_age_s: float) -> float | None:
    """When the oldest deep check the document shows passes max_age_s (None: it shows none)."""
    ended = [checked_ts(r["deep"]["checked_at"]) for r in document["vms"] if (r.get("deep") or {}).get("checked_at")]
    return min(ended) + max_age_s if ended else None


def unproven_rows(document: dict, snapshot, thresholds: dict) -> dict[Key, dict]:
    """Each row that shows a deep check, as its vCenter counters alone judge it: what the row becomes
    once the check expires (judged now, from the few VMs concerned: the snapshot is not kept)."""
    keys = {(r["vcenter"], r["moid"]) for r in document["vms"] if r.get("deep")}
    if not keys:
        return {}
    concerned = dataclasses.replace(snapshot, vms=tuple(v for v in snapshot.vms if (v.vcenter, v.moid) in keys))
    return {(r["vcenter"], r["moid"]): r for r in build_report(concerned, thresholds)["vms"]}


def expire(document: dict, unproven: Mapping[Key, dict], now: float, max_age_s: float) -> dict:
    """``document`` as it may be shown at ``now``: each VM whose deep check is older than max_age_s
    takes its unproven row (``unproven_rows``), with a note; the same document when none is."""
    gone = {(r["vcenter"], r["moid"]): r["deep"]["checked_at"] for r in document["vms"]
            if (r.get("deep") or {}).get("checked_at") and now - checked_ts(r["deep"]["checked_at"]) > max_age_s}
    if not gone:
        return document
    rows = []
    for row in document["vms"]:
        key = (row["vcenter"], row["moid"])
        if key in gone:
            row = dict(unproven[key], notes=[*unproven[key]["notes"], f"the deep check of {gone[key]} expired: older "
                                             f"than {max_age_s:g} s (--proof-max-age), and no scan of the vCenter "
                                             "since has checked the VM again"])
        rows.append(row)
    fresh = with_rows(document, rows)
    checks = document.get("deep")
    if checks is not None:
        fresh["deep"] = dict(checks, vms=[v for v in checks["vms"] if (v["vcenter"], v["moid"]) not in gone])
    return fresh
