"""Which parser kind a capture is, from the first few KiB of its text: one cheap test per kind,
declared with the kind's parser (``@parser(kind, sniff=...)``, esxdiag.parsers.registry).

A file that no test claims is "unknown"; one that two claim is "ambiguous" - both are named to
the user instead of guessed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import esxdiag.parsers
from esxdiag.errors import ParseError
from esxdiag.parsers.cuts import unwrap_prompts
from esxdiag.textio import decode

HEAD_BYTES = 64 * 1024


class _Sniffers(Mapping[str, Callable[[str], bool]]):
    """kind -> its content test, read from the parser declarations (esxdiag.parsers.PARSERS) at each
    use: in their order, and nothing to add here for a new kind."""

    def __getitem__(self, kind: str) -> Callable[[str], bool]:
        return esxdiag.parsers.PARSERS[kind].sniff

    def __iter__(self) -> Iterator[str]:
        return iter(esxdiag.parsers.PARSERS)

    def __len__(self) -> int:
        return len(esxdiag.parsers.PARSERS)


SNIFFERS: Mapping[str, Callable[[str], bool]] = _Sniffers()


@dataclass(frozen=True)
class Sniffed:
    kinds: tuple[str, ...]  # every kind whose test matched: exactly one is a clear answer
    why: str | None = None  # unreadable: binary, undecodable

    @property
    def kind(self) -> str | None:
        return self.kinds[0] if len(self.kinds) == 1 else None


def sniff_text(head: str) -> Sniffed:
    """The kinds whose test claims ``head``, read as the parsers read it: without the shell prompts
    around a pasted output (esxdiag.parsers.cuts.unwrap_prompts)."""
    unwrapped, notes = unwrap_prompts(head)
    if notes:  # the prompt's line is blank now: the output starts the head, as it would alone
        head = unwrapped.lstrip("\r\n")
    return Sniffed(tuple(kind for kind, test in SNIFFERS.items() if test(head)))


def sniff_file(path: Path) -> Sniffed:
    try:
        with open(path, "rb") as fh:
            data = fh.read(HEAD_BYTES)
        head = decode(data, str(path))
    except ParseError as exc:
        return Sniffed((), exc.why)
    except OSError as exc:
        return Sniffed((), exc.strerror or str(exc))
    if len(data) == HEAD_BYTES:  # a multi-line record may be cut at the edge: drop the partial line
        head = head[: head.rfind("\n") + 1] or head
    if not head.strip():
        return Sniffed((), "empty")
    return sniff_text(head)


def text_spec(head: str, windows: bool) -> str:
    """The spec of a 'text' capture: the ESXi version, or a vCPU count (nproc / Windows)."""
    if head.lstrip().startswith("VMware ESXi"):
        return "esxi_version"
    return "win_cpu" if windows else "nproc"


def netstat_spec(head: str) -> str:
    return "nstat" if head.lstrip().startswith(("#kernel", '{"kernel"')) else "netstat_s"
