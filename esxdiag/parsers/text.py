"""Plain one-value outputs (``vmware -vl``, ``nproc``, a PowerShell scalar)."""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.errors import NoData
from esxdiag.parsers.numbers import is_count
from esxdiag.parsers.registry import first_line, one_integer, parser


@dataclass(frozen=True)
class TextOutput:
    lines: tuple[str, ...]
    integer: int | None  # set when the whole output is one integer (nproc, CPU count)
    warnings: tuple[str, ...] = ()


_ESXI_VERSION = first_line(r"^VMware ESXi \d")


@parser("text", about="short text output: vmware -vl (ESXi version), nproc, a PowerShell count",
        sniff=lambda head: one_integer(head) or _ESXI_VERSION(head),
        sample="VMware ESXi 6.0.0 build-5224934\nVMware ESXi 6.0.0 Update 3\n")
def parse_text(text: str) -> TextOutput:
    lines = tuple(line.rstrip() for line in text.splitlines() if line.strip())
    if not lines:
        raise NoData("empty output")
    only = lines[0].strip() if len(lines) == 1 else ""
    warnings = () if text.endswith(("\n", "\r")) or not text.strip() else (
        f"the last line has no line end: {lines[-1].strip()[:40]!r} may be cut short (12 read as 1); "
        "save the output with its final newline",)
    return TextOutput(lines, int(only) if is_count(only) else None, warnings)
