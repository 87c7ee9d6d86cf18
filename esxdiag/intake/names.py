"""What file names say: before/after order, a port or queue number, an interface name."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_BEFORE = re.compile(r"(?:^|[^a-z])(before|start|begin|pre|first)(?:[^a-z]|$)")
_AFTER = re.compile(r"(?:^|[^a-z])(after|end|post|second|last)(?:[^a-z]|$)")
_SN = re.compile(r"(?:^|[^a-z0-9])[st](\d{1,3})(?:[^0-9]|$)")
_TRAILING = re.compile(r"(?:^|[-_. a-z])(\d{1,3})$")
_QUEUE = re.compile(r"(?:^|[^a-z])(?:rx)?(?:queues?|q)[-_=/ #]?(\d{1,3})(?:[^0-9]|$)")
_PORT = re.compile(r"(?<![0-9])(\d{5,10})(?![0-9])")
_PORTSET = re.compile(r"(vSwitch\w+?|DvsPortset-\d+)(?=[^A-Za-z0-9]|$)")

def stem(rel: str) -> str:
    name = PurePosixPath(rel).name
    for suffix in (".txt", ".out", ".log", ".csv", ".json"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name


def order_hint(rel: str, strip: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """(family, rank) from a file name; ``strip`` removes words that look like hints but are not
    (an interface eth0, a port number)."""
    name = stem(rel)
    for word in strip:
        if word:
            name = name.replace(word, " ")
    low = name.lower()
    before, after = _BEFORE.search(low), _AFTER.search(low)
    if before and not after:
        return ("before/after" if before.group(1) in ("before", "pre", "first") else "start/end"), 0
    if after and not before:
        return ("before/after" if after.group(1) in ("after", "post", "second", "last") else "start/end"), 1
    if m := _SN.search(low):
        return ("s0/s1" if low[m.start(1) - 1] == "s" else "t0/t1"), int(m.group(1))
    if m := _TRAILING.search(low):
        return "trailing 1/2", int(m.group(1))
    return None


def queue_number(rel: str) -> str | None:
    m = _QUEUE.search(stem(rel).lower().replace("rxsummary", ""))
    return str(int(m.group(1))) if m else None


def port_numbers(rel: str) -> list[int]:
    return [int(p) for p in _PORT.findall(rel)]


def portset(rel: str) -> str | None:
    m = _PORTSET.search(rel)
    return m.group(1) if m else None


def mentions(rel: str, word: str) -> bool:
    """An interface name as a word of the file name: eth0 in ethtool-S-eth0.txt, not in eth01."""
    return re.search(r"(?:^|[^A-Za-z0-9])" + re.escape(word) + r"(?:[^A-Za-z0-9]|$)", stem(rel)) is not None


# Linux interface names as they appear in file names: eth0, ens192, enp3s0f1, eno1, em1, p1p2, bond0, eth0.100
_IFACE = re.compile(r"(?<![A-Za-z0-9])((?:eth|ens|enp|eno|enx|em|ib|bond|team|wlan|wlp|p[0-9]{1,3}p)[0-9][A-Za-z0-9]{0,12}"
                    r"(?:\.[0-9]{1,4})?)(?![A-Za-z0-9])")


def interfaces(rel: str) -> list[str]:
    """The interface-like words of a file name, each once: ['eth0'] for ethtool-i-eth0.txt."""
    return list(dict.fromkeys(_IFACE.findall(stem(rel))))


def named_for(rel: str, word: str, drop: tuple[str, ...] = ()) -> str:
    """``rel`` renamed so that the only interface it names is ``word``: the interface-like words and
    ``drop`` taken out of its name, ``-word`` put before the extension (a name that then says one
    interface, read as that one)."""
    return only(rel, word, [_IFACE] + [_word(w) for w in drop])


_VMNIC = re.compile(r"vmnic[0-9]{1,4}")
_NUMBER = re.compile(r"(?<![0-9])[0-9]{1,12}(?![0-9])")
_ORDER = re.compile(r"(?<![A-Za-z0-9])(?:before|start|begin|pre|first|after|end|post|second|last|[st][0-9]{1,3})"
                    r"(?![A-Za-z0-9])|(?<![A-Za-z0-9])[0-9]{1,3}$", re.I)


def numbers(rel: str) -> list[str]:
    """Every number of a file name's stem (a world ID of any length)."""
    return _NUMBER.findall(stem(rel))


def only(rel: str, word: str, patterns: list[re.Pattern]) -> str:
    """``rel`` with every match of ``patterns`` taken out of its stem and ``-word`` put before its
    extension: the advice "rename it to ..." gives a name that says ``word`` and nothing it competes
    with, so the renamed file is placed."""
    head, slash, name = rel.rpartition("/")
    base = stem(rel)
    ext = name[len(base):]
    for pattern in patterns:
        base = pattern.sub(" ", base)
    base = re.sub(r"[-_. ]{2,}", "-", base).strip("-_. ")
    return f"{head}{slash}{base + '-' if base else ''}{word}{ext}"


def with_vmnic(rel: str, vmnic: str) -> str:
    return only(rel, vmnic, [_VMNIC])


def with_number(rel: str, number: str) -> str:
    """A world ID or a port number as the file name's only number."""
    return only(rel, number, [_NUMBER])


def with_order(rel: str, word: str) -> str:
    """A sample-order word (before, after, s2) as the file name's only one."""
    return only(rel, word, [_ORDER])


def _word(text: str) -> re.Pattern:
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(text) + r"(?![A-Za-z0-9])")
