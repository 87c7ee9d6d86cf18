"""Captures cut short. Every command the collectors run ends its output with a line end, so
a capture whose last line has none was cut inside that line (a size cap, an interrupted copy,
a paste that stopped mid-number): the value on it is not trusted. A counter cut from 2,103 to
21 would read as a counter reset and invent a delta, so counter parsers drop such a line with a
warning instead of reading it."""

from __future__ import annotations


def drop_cut_line(text: str, keep: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """(text without its last line when that line has no line end, warnings). A last line equal
    (stripped) to one of ``keep`` (a closing ``}``) is structure, not a value, and stays."""
    if not text or text.endswith(("\n", "\r")):
        return text, []
    head, _, last = text.rpartition("\n")
    if not last.strip() or last.strip() in keep:
        return text, []
    number = head.count("\n") + 2 if head or text.startswith("\n") else 1
    shown = last.strip()[:60]
    return head + "\n" if head else "", [f"line {number} has no line end (capture cut short?): "
                                          f"{shown!r} not used"]
