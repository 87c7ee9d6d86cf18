"""vsish node output (docs/raw-formats.md §2): ``title {`` + ``label:value`` lines + ``}``.

``vsish -e get`` prints one node per call. Pasted copies lose the indent, carry prose after a
value, or were grep-filtered (no title, no closing brace): all are accepted, the last with
``complete=False`` and a warning. ``vsish -pe get`` ("python mode") is read by
esxdiag.parsers.vsish_python (re-exported here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.numbers import count, is_count
from esxdiag.parsers.registry import all_lines, has, parser
from esxdiag.parsers.vsish_python import VsishDict, parse_python_mode

__all__ = ["parse_node", "parse_rxsummary", "parse_rxqueue_status", "parse_clientstats", "parse_ls",
           "parse_python_mode", "VsishDict", "VsishNode", "RxSummary", "RxQueueStatus", "ClientStats",
           "VsishListing"]

# A value is the integer right after a label's ':' (ASCII digits); prose may follow after
# whitespace. Lines are split with str methods and anchored matches at known offsets: every
# step is linear in the line (a regex with a lazy label and an optional integer backtracked).
_VALUE_AT = re.compile(r"-?[0-9]+(?=\s|$)")
_VSISH_ERROR = re.compile(r"^\s*\w+\(\):")


@dataclass(frozen=True)
class VsishNode:
    """One parsed node; nested ``name {`` blocks become ``name/label`` keys."""

    title: str | None
    counters: dict[str, int]
    texts: dict[str, str]  # label:value lines whose value is not an integer (kept, lossless)
    complete: bool
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class RxSummary:
    counters: dict[str, int]
    ring1_full: int | None
    ring2_full: int | None
    out_of_buffers: int | None
    ring1_size: int | None
    ring2_size: int | None
    title: str | None
    complete: bool
    warnings: tuple[str, ...]
    texts: dict[str, str]


@dataclass(frozen=True)
class RxQueueStatus:
    counters: dict[str, int]
    ring1_size: int | None
    ring2_size: int | None
    title: str | None
    complete: bool
    warnings: tuple[str, ...]
    texts: dict[str, str]


@dataclass(frozen=True)
class ClientStats:
    counters: dict[str, int]
    dropped_rx: int | None
    dropped_tx: int | None
    title: str | None
    complete: bool
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class VsishListing:
    entries: tuple[str, ...]
    directories: tuple[str, ...]  # the entries that were printed with a trailing '/'
    warnings: tuple[str, ...] = ()


RXSUMMARY_KEYS = ("running out of buffers", "# of times the 1st ring is full",
                  "# of times the 2nd ring is full", "1st ring size", "2nd ring size", "pkts rx ok")
STATUS_KEYS = ("ring #1 size", "ring #2 size")
CLIENTSTATS_KEYS = ("droppedRx", "droppedTx", "pktsRxOK", "pktsTxOK")


def parse_node(text: str, pairs_per_line: bool = False) -> VsishNode:
    """Generic ``vsish -e get`` grammar shared by every node parser here. A last line without a
    line end was cut: its value is dropped with a warning (esxdiag.parsers.cuts)."""
    if not text.strip():
        raise NoData("empty vsish output")
    text, warnings = drop_cut_line(text, keep=("}",))
    skipped = Skipped(warnings)
    counters: dict[str, int] = {}
    texts: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    title: str | None = None
    sections: list[str] = []  # open '{' blocks below the title
    opened = closed = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or skipped.cut_mark(number, line):
            continue
        if _VSISH_ERROR.match(line):
            raise ParseError(f"vsish printed an error or notice, not node fields: {line[:120]}", line=number)
        if closed:
            raise ParseError(f"text after the closing '}}': {line[:60]!r} (two nodes in one capture?)",
                             line=number)
        if line.endswith("{"):
            name = line[:-1].strip()
            if not opened and (counters or texts):
                raise ParseError("'{' after fields: two nodes in one capture?", line=number)
            if opened and name == title:
                raise ParseError(f"{name!r} opened again before '}}': two nodes in one capture?", line=number)
            if not opened:
                title, opened = name or None, True
            else:  # a nested struct, printed as "name:type {"
                sections.append(name.split(":")[0].strip())
            continue
        if line == "}":
            if sections:
                sections.pop()
            elif opened:
                closed = True
            else:
                raise ParseError("'}' without an opening '{'", line=number)
            continue
        prefix = "".join(f"{s}/" for s in sections)
        try:
            found, text_field = _fields(line, pairs_per_line, number)
        except ParseError as exc:  # an unknown line; a bad value on a label:value line is not skipped
            if not exc.why.startswith("not a vsish"):
                raise
            skipped.line(exc, started=opened or bool(counters))
            continue
        if text_field is not None:
            key = prefix + text_field[0]
            _check_repeat(key, first_seen, number)
            texts[key] = text_field[1]
            continue
        for key, value in found:
            _check_repeat(prefix + key, first_seen, number)
            counters[prefix + key] = value
    skipped.check(len(counters))
    if not opened or not closed:
        missing = "title line and closing '}'" if not opened else "closing '}'"
        warnings.append(f"no {missing}: a filtered or cut paste, fields may be missing")
    if not counters and not texts:
        raise NoData(f"vsish node {title!r} has no fields" if title else "no vsish fields")
    return VsishNode(title, counters, texts, opened and closed and not sections, tuple(warnings))


def _fields(line: str, pairs_per_line: bool, number: int) -> tuple[list[tuple[str, int]], tuple[str, str] | None]:
    """(counters, None) for ``label:N`` lines (several ``key:N`` pairs on one line with
    ``pairs_per_line``), ([], (label, text)) for a non-numeric value."""
    if pairs_per_line:
        tokens = [token.partition(":") for token in line.split()]
        if all(key and sep and _VALUE_AT.fullmatch(value) for key, sep, value in tokens):
            return [(key, _counter(value, key, number)) for key, _, value in tokens], None
    at = line.find(":")
    while at >= 0:  # the first ':' followed by an integer that ends at whitespace or the line end
        if match := _VALUE_AT.match(line, at + 1):
            key = line[:at].strip()
            if not key:
                raise ParseError(f"empty label before ':': {line[:80]!r}", line=number)
            return [(key, _counter(match.group(), key, number))], None
        at = line.find(":", at + 1)
    key, sep, value = line.partition(":")
    if sep and key.strip() and not value[:1].isspace():  # vsish never prints ': '
        return [], (key.strip(), value.strip())
    raise ParseError(f"not a vsish 'label:value' line: {line[:80]!r}", line=number)


def _counter(value: str, key: str, number: int) -> int:
    return count(value, f"counter {key[:60]!r}", number)


def _check_repeat(key: str, first_seen: dict[str, int], number: int) -> None:
    if key in first_seen:
        raise ParseError(f"field {key!r} repeated (first on line {first_seen[key]}): "
                         "two nodes in one capture?", line=number)
    first_seen[key] = number


def _require_any(node: VsishNode, keys: tuple[str, ...], what: str) -> None:
    """One of the node's own counters is there; none of them is printed with a value that is not a count."""
    for key in keys:
        if key in node.texts:
            raise ParseError(f"counter {key!r} is {node.texts[key][:40]!r}: not a non-negative integer")
    if not any(k in node.counters for k in keys):
        shown = node.title or ", ".join(list(node.counters)[:3])
        raise ParseError(f"not {what}: none of {', '.join(repr(k) for k in keys)} in {shown!r}")


_RXSUMMARY_SAMPLE = """\
stats of a vmxnet3 vNIC rx queue {
   LRO pkts rx ok:40638390
   pkts rx ok:40960296
   bytes rx ok:1349559832608
   running out of buffers:8373
   pkts receive error:0
   # of times the 1st ring is full:5724
   # of times the 2nd ring is full:2655
   fail to map a rx buffer:0
   # of times rx queue is stopped:0
}
"""


@parser("vsish-rxsummary",
        about="vsish -e get .../vmxnet3/rxSummary: ring-full and out-of-buffer counters of one vNIC",
        sniff=has("stats of a vmxnet3 vNIC rx queue {", "running out of buffers:"), sample=_RXSUMMARY_SAMPLE)
def parse_rxsummary(text: str) -> RxSummary:
    node = parse_node(text)
    _require_any(node, RXSUMMARY_KEYS, "a vmxnet3 rxSummary node")
    c = node.counters
    return RxSummary(c, c.get("# of times the 1st ring is full"), c.get("# of times the 2nd ring is full"),
                     c.get("running out of buffers"), c.get("1st ring size"), c.get("2nd ring size"),
                     node.title, node.complete, node.warnings, node.texts)


_STATUS_SAMPLE = """\
status of a vmxnet3 vNIC rx queue {
   intr index:0
   error code:0
   ring #1 size:256
   ring #2 size:256
}
"""


@parser("vsish-rxqueue-status", about="vsish -e get .../vmxnet3/rxqueues/N/status: ring #1/#2 size of one rx queue",
        sniff=has("status of a vmxnet3 vNIC rx queue {", "ring #1 size:"), sample=_STATUS_SAMPLE)
def parse_rxqueue_status(text: str) -> RxQueueStatus:
    node = parse_node(text)
    _require_any(node, STATUS_KEYS, "a vmxnet3 rxqueues/<n>/status node")
    c = node.counters
    return RxQueueStatus(c, c.get("ring #1 size"), c.get("ring #2 size"), node.title, node.complete,
                         node.warnings, node.texts)


_CLIENTSTATS_SAMPLE = """\
port client stats {
   pktsTxOK:9050399
   bytesTxOK:13702304086
   droppedTx:0
   pktsRxOK:40997635
   bytesRxOK:1350790077980
   droppedRx:8381
}
"""


@parser("vsish-clientstats", about="vsish -e get .../ports/N/clientStats: a port's droppedRx/droppedTx",
        sniff=has("port client stats {", "droppedRx:"), sample=_CLIENTSTATS_SAMPLE)
def parse_clientstats(text: str) -> ClientStats:
    node = parse_node(text, pairs_per_line=True)
    _require_any(node, CLIENTSTATS_KEYS, "a port clientStats node")
    c = node.counters
    return ClientStats(c, c.get("droppedRx"), c.get("droppedTx"), node.title, node.complete, node.warnings)


@parser("vsish-ls", about="vsish -e ls: a node's entries, one per line (rx queues, portsets)",
        sniff=all_lines(r"^\d{1,3}/$"), sample="0/\n1/\n")
def parse_ls(text: str) -> VsishListing:
    entries: list[str] = []
    directories: list[str] = []
    text, warnings = drop_cut_line(text)
    skipped = Skipped(warnings)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or skipped.cut_mark(number, line):
            continue
        if _VSISH_ERROR.match(line):
            raise ParseError(f"vsish printed an error or notice, not node fields: {line[:120]}", line=number)
        name = line[:-1] if line.endswith("/") else line
        if not name or any(ch.isspace() or not ch.isprintable() for ch in name) or (
                any(ch.isdigit() and not ch.isascii() for ch in name) or name.isdigit() and not is_count(name)):
            skipped.line(ParseError(f"not a vsish ls entry: {line[:80]!r}", line=number), started=bool(entries))
            continue
        entries.append(name)
        if line.endswith("/"):
            directories.append(name)
    skipped.check(len(entries))
    if not entries:
        raise NoData("vsish ls listed no entries")
    return VsishListing(tuple(entries), tuple(directories), tuple(warnings))
