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
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Mapping

from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.confirm import DECIDING, PROVEN
from esxdiag.fleet.history import held_proofs_since
from esxdiag.fleet.model import DeepEvidence, FleetReport, FleetRow, Key
from esxdiag.scanning.deep import DeepCheck


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


def checked_ts(checked_at: str) -> float:
    return datetime.strptime(checked_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def proofs_in_history(path: str | Path, vcenters: list[str], now: float, max_age_s: float) -> dict:
    """(vCenter, MOID) -> the VM's newest deep check in the history younger than max_age_s that no
    scan has retired (a proof retired since is gone, as from serve's state)."""
    since = (datetime.fromtimestamp(now, timezone.utc) - timedelta(seconds=max_age_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {(row["vcenter"], row["moid"]): DeepCheck.of(row) for row in held_proofs_since(path, since)
            if row["vcenter"] in vcenters}


def unread_why(row: FleetRow, vm) -> str | None:
    """Why this scan did not read the VM's receive-drop counters (None: it read them, or the VM is
    not running)."""
    if row.power_state != "poweredOn" or row.drops is not None:
        return None
    return (vm.perf_error if vm is not None and vm.perf_error else None) or "no receive-drop figures returned"


@dataclass(frozen=True)
class HeldProofs:
    """What the earlier proofs give this scan: the checks still held (evidence for build_report), the note
    each valid proof adds to its row (held or retired), and the proofs this scan retired."""

    checks: dict[Key, DeepEvidence]
    notes: dict[Key, tuple[str, ...]]
    retired: dict[Key, DeepCheck]


def keep_proofs(report: FleetReport, snapshot, kept: Mapping[Key, DeepCheck], now: float, max_age_s: float,
                checked_now: frozenset[Key] | set[Key] = frozenset()) -> HeldProofs:
    """Which proofs (kept: earlier checks by (vCenter, MOID)) of VMs not checked in this scan (checked_now)
    still hold, judged on ``report``, this scan's report from vCenter's counters: a proof is retired when the
    VM's counters were read and show no drops over the noise floor, or it is not running."""
    vms = {(v.vcenter, v.moid): v for v in snapshot.vms}
    rows = report.by_key
    valid = {key: c for key, c in kept.items() if key in rows and key not in checked_now and decides(c)
             and now - c.checked_ts <= max_age_s}
    unread = {key: why for key in valid if (why := unread_why(rows[key], vms.get(key))) is not None}
    held = {key: c for key, c in valid.items() if key in unread or rows[key].dropping}
    notes: dict[Key, tuple[str, ...]] = {}
    for key, check in valid.items():
        if key in unread:
            note = (f"{proof_words(check)} by the deep check, kept: this scan could not read the VM's receive-drop "
                    f"counters ({unread[key]}); only counters that were read retire it (kept while younger than "
                    f"{max_age_s:g} s, --proof-max-age)")
        elif key in held:
            note = (f"{proof_words(check)} by the deep check, kept while younger than {max_age_s:g} s "
                    "(--proof-max-age) and the drops go on")
        elif rows[key].power_state != "poweredOn":
            note = f"{proof_words(check)} retired: the VM is not running"
        else:
            note = (f"{proof_words(check)} retired: vCenter counters show no receive drops over the noise floor in "
                    "this window")
        notes[key] = (note,)
    return HeldProofs({key: c.evidence() for key, c in held.items()}, notes,
                      {key: c for key, c in valid.items() if key not in held})


def shown_until(report: FleetReport, max_age_s: float) -> float | None:
    """When the oldest deep check the report shows passes max_age_s (None: it shows none)."""
    ended = [checked_ts(r.deep.checked_at) for r in report.rows if r.deep is not None and r.deep.checked_at]
    return min(ended) + max_age_s if ended else None


def unproven_rows(report: FleetReport, snapshot, thresholds: dict[str, float]) -> dict[Key, FleetRow]:
    """Each row that shows a deep check, as its vCenter counters alone judge it: what the row becomes
    once the check expires (judged now, from the few VMs concerned: the snapshot is not kept)."""
    keys = {r.key for r in report.rows if r.deep is not None}
    if not keys:
        return {}
    concerned = dataclasses.replace(snapshot, vms=tuple(v for v in snapshot.vms if (v.vcenter, v.moid) in keys))
    return dict(build_report(concerned, thresholds).by_key)


def expire(report: FleetReport, unproven: Mapping[Key, FleetRow], now: float, max_age_s: float) -> FleetReport:
    """``report`` as it may be shown at ``now``: each VM whose deep check is older than max_age_s
    takes its unproven row (``unproven_rows``), with a note; the same report when none is."""
    gone = {r.key: r.deep.checked_at for r in report.rows
            if r.deep is not None and r.deep.checked_at and now - checked_ts(r.deep.checked_at) > max_age_s}
    if not gone:
        return report
    rows = [dataclasses.replace(unproven[r.key], notes=(*unproven[r.key].notes, (
                f"the deep check of {gone[r.key]} expired: older than {max_age_s:g} s (--proof-max-age), and no "
                "scan of the vCenter since has checked the VM again"))) if r.key in gone else r for r in report.rows]
    fresh = report.with_rows(rows)
    if report.deep is None:
        return fresh
    return dataclasses.replace(fresh, deep=dataclasses.replace(
        report.deep, vms=tuple(v for v in report.deep.vms if v.key not in gone)))
