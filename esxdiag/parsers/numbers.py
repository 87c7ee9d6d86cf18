"""Numbers read from captures. Counters and ring sizes are unsigned 64-bit integers written in
ASCII digits: ``str.isdigit`` also accepts ``²``/``٣`` and ``int()`` turns some of those into
numbers or raises, and a 5,000-digit value exceeds Python's int-from-string limit, so every
parser goes through ``count``. (Measured floats must be finite: esxtop_rows.clean_series.)"""

from __future__ import annotations

from esxdiag.errors import ParseError

U64_MAX = (1 << 64) - 1
_MAX_DIGITS = len(str(U64_MAX))


def is_count(text: str) -> bool:
    """``text`` is a non-negative integer in ASCII digits that fits 64 bits."""
    return 0 < len(text) <= _MAX_DIGITS and text.isascii() and text.isdigit() and int(text) <= U64_MAX


def count(text: str, what: str, line: int | None = None) -> int:
    """A counter or size: a non-negative ASCII integer below 2**64, else ParseError at ``line``."""
    text = text.strip()
    if not is_count(text):
        shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} chars)"
        raise ParseError(f"{what} {shown!r} is not a non-negative integer below 2^64", line=line)
    return int(text)


def json_count(value: object) -> bool:
    """A JSON value usable as a counter: an int (not a bool) in 0 .. 2**64-1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX
