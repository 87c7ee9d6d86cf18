"""``ethtool -S``: a vmxnet3 interface's per-queue device and driver counters, every driver generation
(docs/bundle-format.md); any other driver's counters (an SR-IOV VF's, a DirectPath NIC's) by their own names in
``device_counters``."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.numbers import count
from esxdiag.parsers.registry import lines, parser
from esxdiag.parsers.repeats import Agreeing


# Exact vmxnet3 string tables (label as printed after stripping its own leading spaces, and
# whether it is a drop-reason sub-item).  Source: vmxnet3_ethtool.c of each generation.
_TX_DEV = ("TSO pkts tx", "TSO bytes tx", "ucast pkts tx", "ucast bytes tx", "mcast pkts tx",
           "mcast bytes tx", "bcast pkts tx", "bcast bytes tx", "pkts tx err", "pkts tx discard")
_TX_DRV = ("drv dropped tx total", "too many frags", "giant hdr", "hdr err", "tso", "ring full",
           "pkts linearized", "hdr cloned", "giant hdr")
_RX_DEV = ("LRO pkts rx", "LRO byte rx", "ucast pkts rx", "ucast bytes rx", "mcast pkts rx",
           "mcast bytes rx", "bcast pkts rx", "bcast bytes rx", "pkts rx OOB", "pkts rx err")
_RX_DRV = ("drv dropped rx total", "err", "fcs", "rx buf alloc fail")
_XDP_TX = ("xdp xmit", "xdp xmit err")
_XDP_RX = ("xdp packets", "xdp tx", "xdp redirects", "xdp drops", "xdp aborted")
_OOB_OLD = "pkts rx out of buf"  # generations A and B


def _rx_dev(oob: str) -> tuple[str, ...]:
    return tuple(oob if label == "pkts rx OOB" else label for label in _RX_DEV)


# per generation: (tx labels per queue, rx labels per queue); A has no queue markers
GENERATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "A": (_TX_DEV + _TX_DRV, _rx_dev(_OOB_OLD) + _RX_DRV),
    "B": (("Tx Queue#",) + _TX_DEV + _TX_DRV, ("Rx Queue#",) + _rx_dev(_OOB_OLD) + _RX_DRV),
    "C": (("Tx Queue#",) + _TX_DEV + _TX_DRV, ("Rx Queue#",) + _RX_DEV + _RX_DRV),
    "D": (("Tx Queue#",) + _TX_DEV + _TX_DRV + _XDP_TX,
          ("Rx Queue#",) + _RX_DEV + _RX_DRV[:4] + _XDP_RX),
}
_TX_LABELS = frozenset(_TX_DEV + _TX_DRV + _XDP_TX)
_RX_LABELS = frozenset(_RX_DEV + _RX_DRV + _XDP_RX + (_OOB_OLD,))
_ALWAYS_SUB = frozenset({"too many frags", "hdr err", "tso", "err", "fcs"} | set(_XDP_RX))
_DROP_PARENT = {"tx": "drv dropped tx total", "rx": "drv dropped rx total"}
_GLOBAL = "tx timeout count"
_STAT_LINE = re.compile(r"^(?P<lead>[ \t]*)(?P<label>\S.*?):[ \t]*(?P<value>[0-9]+)[ \t]*$")
_HEADER = "NIC statistics:"


@dataclass(frozen=True)
class RxQueueStats:
    queue: int
    pkts_rx_oob: int | None
    drv_dropped_rx_total: int | None
    rx_buf_alloc_fail: int | None
    counters: dict[str, int]


@dataclass(frozen=True)
class TxQueueStats:
    queue: int
    drv_dropped_tx_total: int | None
    ring_full: int | None
    counters: dict[str, int]


@dataclass(frozen=True)
class EthtoolStats:
    rx_queues: tuple[RxQueueStats, ...]
    tx_queues: tuple[TxQueueStats, ...]
    rx_oob_total: int | None
    generation: str | None
    device_counters: dict[str, int]
    entries: tuple[tuple[str, int | None, int, str, int], ...]  # (section, queue, level, label, value)
    warnings: tuple[str, ...]


_SAMPLE = """\
NIC statistics:
     Tx Queue#: 0
       TSO pkts tx: 0
       TSO bytes tx: 0
       ucast pkts tx: 4539095
       ucast bytes tx: 6872189830
       mcast pkts tx: 0
       mcast bytes tx: 0
       bcast pkts tx: 2
       bcast bytes tx: 120
       pkts tx err: 0
       pkts tx discard: 0
       drv dropped tx total: 0
          too many frags: 0
          giant hdr: 0
          hdr err: 0
          tso: 0
       ring full: 0
       pkts linearized: 0
       hdr cloned: 0
       giant hdr: 0
     Rx Queue#: 0
       LRO pkts rx: 20454644
       LRO byte rx: 673939610512
       ucast pkts rx: 20616252
       ucast bytes rx: 679264270896
       mcast pkts rx: 0
       mcast bytes rx: 0
       bcast pkts rx: 97
       bcast bytes rx: 13232
       pkts rx OOB: 5794
       pkts rx err: 0
       drv dropped rx total: 1873
          err: 1873
          fcs: 0
       rx buf alloc fail: 0
     tx timeout count: 0
"""
_VMXNET3_COUNTER = re.compile(r"^(pkts rx OOB|drv dropped (rx|tx) total|pkts rx err|Rx Queue#|Tx Queue#)\b")


def _sniff(head: str) -> bool:
    """`ethtool -S`, or its vmxnet3 lines alone (`ethtool -S eth0 | grep OOB`)."""
    found = [line.strip() for line in lines(head)]
    if found and found[0] == "NIC statistics:":
        return True
    return bool(found) and all(re.match(r"^[\w #./-]+: ?\d+$", line) for line in found) \
        and any(_VMXNET3_COUNTER.match(line) for line in found)


@parser("ethtool-stats", about="ethtool -S IFACE: vmxnet3 per-queue counters (pkts rx OOB, driver drops); any "
                               "other driver's counters by name",
        sniff=_sniff, sample=_SAMPLE)
def parse_stats(text: str) -> EthtoolStats:
    """``ethtool -S <if>``, whole or pasted/grep-filtered. Sub-item counters (drop reasons) are
    keyed ``"<parent> / <label>"`` so the two ``giant hdr`` counters stay distinct."""
    text, warnings = drop_cut_line(text)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    _reject_stats_input(lines, warnings)
    skipped = Skipped(warnings)
    stats = _stat_lines(lines, skipped)
    skipped.check(len(stats))
    labels = {m["label"].strip() for _, m in stats}
    if not stats or not (labels & (_TX_LABELS | _RX_LABELS | {"Tx Queue#", "Rx Queue#", _GLOBAL})
                         or any(line.strip() == _HEADER for _, line in lines) or _driver_counter_names(labels)):
        raise ParseError("no 'NIC statistics:' header, no vmxnet3 counter lines and no driver counter names "
                         "(rx_..., tx_...): not ethtool -S output", line=lines[0][0])
    base = min(len(m["lead"].expandtabs()) for _, m in stats)
    varied = len({len(m["lead"].expandtabs()) for _, m in stats}) > 1
    elided = bool(skipped.marks)
    entries: list[tuple[str, int | None, int, str, int]] = []
    queues: dict[tuple[str, int], Agreeing] = {}
    device: dict[str, int] = {}
    seen_markers: dict[str, list[int]] = {"tx": [], "rx": []}
    occurrences: Counter[tuple[str, str]] = Counter()
    section, queue, in_drop, sub_giant_seen = "", None, False, False
    for n, m in stats:
        label, value = m["label"].strip(), count(m["value"], f"counter {m['label'].strip()[:60]!r}", n)
        rel = len(m["lead"].expandtabs()) - base
        if label in ("Tx Queue#", "Rx Queue#"):
            if label == "Tx Queue#" and seen_markers["rx"]:
                raise ParseError("Tx Queue# after the Rx queues: two ethtool -S outputs in one capture? "
                                 "Save each sample in its own file", line=n)
            section = label[:2].lower()
            queue = _marker_queue(section, value, seen_markers[section], n, warnings, elided)
            in_drop, sub_giant_seen = False, False
            queues.setdefault((section, queue), Agreeing(warnings))
            entries.append((section, queue, 0, label, value))
            continue
        if label == _GLOBAL or not (label in _TX_LABELS or label in _RX_LABELS):
            if label == _GLOBAL or queue is None:
                device[label] = value
                entries.append(("global", None, 0, label, value))
                continue
        owner = "tx" if label in _TX_LABELS else "rx" if label in _RX_LABELS else section
        if owner != section:
            section, queue, in_drop, sub_giant_seen = owner, None, False, False
        if label == "giant hdr":
            sub = rel >= 3 if varied else (in_drop and not sub_giant_seen)
            sub_giant_seen = sub_giant_seen or sub
        else:
            sub = label in _ALWAYS_SUB
        if label.startswith("drv dropped"):
            in_drop = True
        elif not sub:
            in_drop = False
        key = f"{_DROP_PARENT[section]} / {label}" if sub else label
        q = queue
        if q is None:
            q = occurrences[(section, key)]
            occurrences[(section, key)] += 1
        counters = queues.setdefault((section, q), Agreeing(warnings))
        counters.put(key, value, f"line {n}", f"{section} queue {q} {key!r}")
        entries.append((section, q, 2 if sub else 1, label, value))
    if occurrences and max(occurrences.values()) > 1:
        warnings.append("no Tx Queue#/Rx Queue# lines: queue index inferred from the order of repeated counters")
    if elided:
        warnings.append("elided paste ('...'): some counters are missing")
    marked = bool(seen_markers["tx"] or seen_markers["rx"])
    oob_lead = next((len(m["lead"].expandtabs()) for _, m in stats if m["label"].strip() == _OOB_OLD), None)
    return _assemble(queues, device, entries, warnings, _generation(labels, marked, oob_lead), marked)


_DRIVER_COUNTER = re.compile(r"[\w.\-]*[rt]x[\w.\-]*")


def _driver_counter_names(labels: set[str]) -> bool:
    """Headerless lines of another driver (``ethtool -S ens224 | grep rx_``): every label one word with rx or
    tx in it (rx_out_of_buffer, rx-0.packets), as drivers name their counters; "Packets received: N" is not."""
    return bool(labels) and all(_DRIVER_COUNTER.fullmatch(label) for label in labels)


def _stat_lines(lines: list[tuple[int, str]], skipped: Skipped) -> list[tuple[int, re.Match]]:
    """The ``label: N`` lines; the header and cut marks ('...') sit between them, any other line is
    skipped with a warning once the capture has shown it is ethtool -S."""
    stats, headers = [], []
    for n, line in lines:
        body = line.strip()
        if body == _HEADER:
            headers.append(n)
            if len(headers) > 1:
                raise ParseError(f"a second '{_HEADER}' (first on line {headers[0]}): two ethtool -S outputs "
                                 "in one capture? Save each sample in its own file", line=n)
        elif m := _STAT_LINE.match(line):
            stats.append((n, m))
        elif _bad_number(body):  # a counter line whose value is damaged: an error, not a skip
            count(body.rpartition(":")[2], f"counter {body.rpartition(':')[0].strip()[:60]!r}", n)
        elif not skipped.cut_mark(n, line):
            skipped.line(ParseError(f"not ethtool -S output: not a 'label: <non-negative integer>' line: "
                                    f"{body[:80]!r}", line=n), started=bool(stats or headers))
    return stats


def _bad_number(body: str) -> bool:
    """``label: -5``, ``label: 1e3``: the shape of a counter line with a value that is not a count."""
    label, sep, value = body.rpartition(":")
    value = value.strip()
    return bool(sep and label.strip() and value) and (value[0] in "+-" or value[0].isdigit())


def _reject_stats_input(lines: list[tuple[int, str]], warnings: list[str]) -> None:
    if not lines:
        if warnings:
            raise ParseError(warnings[0])
        raise NoData("empty ethtool -S output")
    first = lines[0][1].strip()
    if first.lower().startswith("no stats available"):
        raise NoData("the driver reports no statistics ('no stats available')")
    if first.startswith("Cannot get stats strings") and "not supported" in first:
        raise NoData(f"the driver has no ethtool statistics ({first})")
    if first.startswith("Cannot ") or first.startswith("netlink error"):
        raise ParseError(f"ethtool failed: {first}", line=lines[0][0])
    if first.startswith("Ring parameters for") or first.startswith("driver:"):
        raise ParseError(f"this is ethtool -g/-i output ({first!r}), not ethtool -S", line=lines[0][0])


def _marker_queue(section: str, value: int, seen: list[int], n: int, warnings: list[str],
                  elided: bool) -> int:
    # ntx != nrx kernels print misaligned values in the later rx markers
    if value in seen or (not elided and value != len(seen)):
        fixed = max(seen) + 1 if elided else len(seen)
        warnings.append(f"line {n}: {section.title()} Queue# {value} is out of sequence; using position {fixed}")
        value = fixed
    seen.append(value)
    return value


def _cut_queue(entries, device, generation, warnings) -> tuple[str, int] | None:
    """The last queue when the capture stops inside it: no global ``tx timeout count`` line after
    it, and its labels are a strict prefix of what the queue before it in the same section printed
    (or, for the only rx queue of an unfiltered capture, of the generation's table)."""
    if _GLOBAL in device or not entries or entries[-1][0] not in ("tx", "rx"):
        return None
    labels: dict[tuple[str, int | None], list[str]] = {}
    for section, queue, level, label, _ in entries:
        if level > 0 or label not in ("Tx Queue#", "Rx Queue#"):
            labels.setdefault((section, queue), []).append(label)
    last = (entries[-1][0], entries[-1][1])
    if last[1] is None:
        return None
    before = [key for key in labels if key[0] == last[0] and key != last]
    reference = labels[before[-1]] if before else None
    tx_labels = [labels[key] for key in labels if key[0] == "tx"]
    if reference is None and last[0] == "rx" and tx_labels:  # the generation may be in the cut part
        tables = [GENERATIONS[generation]] if generation in GENERATIONS else GENERATIONS.values()
        reference = next((list(rx[1:]) for tx, rx in tables if all(t == list(tx[1:]) for t in tx_labels)), None)
    got = labels.get(last, [])
    if reference is None or len(got) >= len(reference) or reference[:len(got)] != got:
        return None
    missing = reference[len(got):]
    warnings.append(f"{last[0]} queue {last[1]} stops after {len(got)} of its {len(reference)} counters "
                    f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''} missing, no "
                    f"'{_GLOBAL}' line): the capture was cut; that queue is left out of the totals and rates")
    return last


def _assemble(queues, device, entries, warnings, generation, marked) -> EthtoolStats:
    cut = _cut_queue(entries, device, generation, warnings) if marked else None
    typed = {key: ({} if key == cut else c) for key, c in queues.items()}  # a cut queue: counters kept, not used
    rx = tuple(RxQueueStats(q, t.get("pkts rx OOB", t.get(_OOB_OLD)), t.get("drv dropped rx total"),
                            t.get("rx buf alloc fail"), dict(queues[(s, q)]))
               for (s, q), t in sorted(typed.items()) if s == "rx")
    tx = tuple(TxQueueStats(q, t.get("drv dropped tx total"), t.get("ring full"), dict(queues[(s, q)]))
               for (s, q), t in sorted(typed.items()) if s == "tx")
    if tx and rx and len(tx) != len(rx):
        warnings.append(f"ntx ({len(tx)}) != nrx ({len(rx)}): kernels 2.6.37-4.x fill rx values looping over "
                        "num_tx_queues, so rx counters may be misaligned")
    if generation and marked:
        tx_table, rx_table = (set(t) for t in GENERATIONS[generation])
        unknown = sorted({e[3] for e in entries if e[0] in ("tx", "rx")} - tx_table - rx_table)
        if unknown:
            warnings.append(f"labels not in the generation {generation} table: {', '.join(unknown)}")
    oobs = [q.pkts_rx_oob for q in rx if q.pkts_rx_oob is not None]
    if oobs and len(oobs) < len(rx):  # a partial sum would read as a drop or a counter reset
        warnings.append(f"pkts rx OOB missing on {len(rx) - len(oobs)} of {len(rx)} rx queues: no total")
        oobs = []
    return EthtoolStats(rx, tx, sum(oobs) if oobs else None, generation, device, tuple(entries), tuple(warnings))


def _generation(labels: set[str], marked: bool, oob_lead: int | None) -> str | None:
    """Best effort from the visible labels (a grep may hide the distinguishing ones)."""
    if labels & (set(_XDP_TX) | set(_XDP_RX)):
        return "D"
    if "pkts rx OOB" in labels:
        return "C"
    if oob_lead is not None:  # raw lines: 5-space ethtool prefix + the driver's own indent
        return "B" if marked or oob_lead == 7 else "A" if oob_lead == 5 else None
    return None


# ---------------------------------------------------------------- ethtool -g
