"""The one escaping path for everything esxdiag writes to a terminal (the text summary, --format
rings, progress lines, error messages). Names and output from hosts, guests and vCenter are
untrusted: C0/C1 control characters (ESC, BEL, CSI 0x9b, newlines that forge lines) and Unicode
direction overrides (which make a shown command read differently from what it is) are made
visible as escapes, never passed through."""

from __future__ import annotations

import re
from typing import Any, Iterable

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe_text(value: Any) -> str:
    """Untrusted text for a terminal: control and direction-override characters made visible."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        str(value))


def safe_lines(lines: Iterable[str]) -> str:
    """Lines for a terminal, each escaped whole (so no interpolated value can be missed), newline-ended."""
    return "".join(safe_text(line) + "\n" for line in lines)
