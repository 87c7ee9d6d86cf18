"""`esxdiag diff BEFORE AFTER`: did the change help? The two sides are analysed (or read as report
JSON) and compared per VM and vNIC in the numbers the verdict rests on: rates per second of ring-full
events and drops, ring sizes, worst-vCPU %RDY, TCP retransmits per 1,000 segments sent, the verdict.

Rates need a known window on both sides; counts in the window are compared only when both windows
are equally long. The counters' totals at each side's end (since boot or since they were cleared)
are always shown: they compare two tests when each started from cleared counters (a reboot)."""

from __future__ import annotations

from typing import Any

from esxdiag.errors import EsxdiagError
from esxdiag.vocabulary import DIFF_RATES as RATES, DIFF_SIZES as SIZES, DIFF_TOTALS as TOTALS

SCHEMA = "esxdiag.diff/1"


class NotComparable(EsxdiagError):
    """The two sides are not about the same VM (or share no VM)."""


def compare(before: dict[str, Any], after: dict[str, Any], vm: str | None = None) -> dict[str, Any]:
    by_b = {v["name"]: v for v in before["vms"]}
    by_a = {v["name"]: v for v in after["vms"]}
    notes: list[str] = []
    if vm is not None:
        missing = [side for side, names in (("BEFORE", by_b), ("AFTER", by_a)) if vm not in names]
        if missing:
            raise NotComparable(f"VM {vm!r} is not in {' and '.join(missing)}")
        pairs = [(vm, vm)]
    else:
        pairs = [(n, n) for n in by_b if n in by_a]
        if not pairs and len(by_b) == 1 and len(by_a) == 1:
            pairs = [(next(iter(by_b)), next(iter(by_a)))]
            notes.append(f"the VM is named {pairs[0][0]} in BEFORE and {pairs[0][1]} in AFTER: compared as one VM "
                         "because each side holds only that one")
        if not pairs:
            raise NotComparable(f"BEFORE is about {', '.join(by_b) or 'no VM'}, AFTER about {', '.join(by_a) or 'no VM'}"
                                ": not the same VM (choose one with --vm)")
    compared = {b for b, _ in pairs} | {a for _, a in pairs}
    notes += _window_notes(before, after)
    return {
        "schema": SCHEMA,
        "before": _side(before), "after": _side(after),
        "vms": [_vm(by_b[b], by_a[a], notes) for b, a in pairs],
        "only_before": [n for n in by_b if n not in compared], "only_after": [n for n in by_a if n not in compared],
        "notes": notes,
    }


def _window_notes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    wb, wa = _side(before)["window_s"], _side(after)["window_s"]
    if wb is not None and wb == wa:
        return []
    lengths = f"BEFORE's window is {_seconds(wb)}, AFTER's {_seconds(wa)}"
    if wb is not None and wa is not None:
        compared = "rates per second are compared, counts in the window are not"
    else:
        compared = "neither rates per second nor counts in the window can be compared"
    return [f"{lengths}: {compared}. The totals are each counter at the side's end, since boot or since it was "
            "cleared: they compare the two tests only if both started from cleared counters (e.g. a reboot) and "
            "ran the same load"]


def _seconds(window: float | None) -> str:
    return "unknown" if window is None else f"{window:g} s"


def _side(doc: dict[str, Any]) -> dict[str, Any]:
    bundle = doc.get("bundle") or {}
    return {"source": bundle.get("path"), "window_s": bundle.get("window_s"), "created": bundle.get("created")}


def _vm(b: dict[str, Any], a: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {
        "name": b["name"] if b["name"] == a["name"] else f"{b['name']} -> {a['name']}",
        "cpu": {key: _pair(b.get("cpu", {}).get(key), a.get("cpu", {}).get(key), lower_is_better=True)
                for key in ("ready_pct_max", "max_limited_pct_max", "costop_pct_max")},
        "cpu_source": [b.get("cpu", {}).get("source"), a.get("cpu", {}).get("source")],
        "tcp": {"retransmits_per_1000_sent": _pair(_per_1000(b), _per_1000(a), lower_is_better=True),
                "retransmitted_segments": _window_pair(_tcp(b, "retransmitted_segments"),
                                                       _tcp(a, "retransmitted_segments")),
                "retransmitted_segments_total": _total_pair(_tcp(b, "retransmitted_segments"),
                                                            _tcp(a, "retransmitted_segments"))},
        "vnics": [_vnic(nb, na) for nb, na in _match_vnics(b, a, notes)],
    }


def _match_vnics(b: dict[str, Any], a: dict[str, Any], notes: list[str]) -> list[tuple]:
    """By MAC; a vNIC whose MAC changed (a new adapter) by its label, then by position when each
    side has one left."""
    left_b, left_a = list(b["vnics"]), list(a["vnics"])
    pairs = []
    for key in ("mac", "label"):
        for nic in list(left_b):
            match = next((n for n in left_a if nic.get(key) and n.get(key) == nic.get(key)), None)
            if match is not None:
                pairs.append((nic, match))
                left_b.remove(nic)
                left_a.remove(match)
                if key == "label":
                    notes.append(f"{nic['label']}: MAC {nic['mac']} before, {match['mac']} after: matched by label")
    if len(left_b) == 1 and len(left_a) == 1:
        notes.append(f"vNIC {left_b[0]['mac']} before and {left_a[0]['mac']} after matched as the only ones left")
        pairs.append((left_b.pop(), left_a.pop()))
    return pairs + [(n, None) for n in left_b] + [(None, n) for n in left_a]


def _vnic(b: dict[str, Any] | None, a: dict[str, Any] | None) -> dict[str, Any]:
    either = a or b or {}
    mb, ma = (b or {}).get("metrics", {}), (a or {}).get("metrics", {})
    return {
        "mac": either.get("mac"), "label": either.get("label"), "guest_interface": either.get("guest_interface"),
        "present": [b is not None, a is not None],
        "verdict": [(b or {}).get("ring_verdict"), (a or {}).get("ring_verdict")],
        "sizes": {key: [mb.get(key), ma.get(key)] for key, _ in SIZES},
        "rates": {key: _pair(_rate(mb.get(key)), _rate(ma.get(key)), lower_is_better=True) for key, _ in RATES},
        "totals": {key: _total_pair(mb.get(key), ma.get(key)) for key, _ in TOTALS},
    }


def _rate(counter: dict[str, Any] | None) -> float | None:
    return None if not counter else counter.get("per_s")


def _tcp(vm: dict[str, Any], key: str) -> dict[str, Any]:
    return (vm.get("tcp") or {}).get(key) or {}


def _window_pair(b: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    """Counts in the window: a change only between windows of the same known length."""
    pair = _pair(b.get("delta"), a.get("delta"), lower_is_better=True)
    if b.get("seconds") is None or b.get("seconds") != a.get("seconds"):
        pair["change"] = None
    return pair


def _total_pair(b: dict[str, Any] | None, a: dict[str, Any] | None) -> dict[str, Any]:
    return _pair((b or {}).get("total"), (a or {}).get("total"), lower_is_better=True)


def _per_1000(vm: dict[str, Any]) -> float | None:
    retrans, sent = _tcp(vm, "retransmitted_segments").get("delta"), _tcp(vm, "segments_sent").get("delta")
    return None if retrans is None or not sent else round(1000.0 * retrans / sent, 3)


def _pair(before: float | None, after: float | None, lower_is_better: bool) -> dict[str, Any]:
    return {"before": before, "after": after, "change": change(before, after, lower_is_better)}


def change(before: float | None, after: float | None, lower_is_better: bool = True) -> str | None:
    """'12.3x lower', '2.0x higher', 'unchanged', 'gone (was X)', 'new'; None when a side is unknown."""
    if before is None or after is None:
        return None
    if before == after:
        return "unchanged"
    if after == 0:
        return "to zero"
    if before == 0:
        return "from zero"
    ratio = before / after if after < before else after / before
    word = "lower" if after < before else "higher"
    return f"{ratio:.1f}x {word}"
