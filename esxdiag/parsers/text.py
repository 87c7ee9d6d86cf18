"""Plain one-value outputs (``vmware -vl``, ``nproc``, a PowerShell scalar)."""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.errors import NoData
from esxdiag.parsers.numbers import is_count


@dataclass(frozen=True)
class TextOutput:
    lines: tuple[str, ...]
    integer: int | None  # set when the whole output is one integer (nproc, CPU count)


def parse_text(text: str) -> TextOutput:
    lines = tuple(line.rstrip() for line in text.splitlines() if line.strip())
    if not lines:
        raise NoData("empty output")
    only = lines[0].strip() if len(lines) == 1 else ""
    return TextOutput(lines, int(only) if is_count(only) else None)
