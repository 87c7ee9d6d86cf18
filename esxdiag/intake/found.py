"""One capture found in a folder, a sosreport or a vm-support bundle, before it has a target."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from esxdiag.errors import BundleError


@dataclass
class Found:
    rel: str  # the name shown in reports and written in the manifest (POSIX, relative)
    path: Path  # where the bytes are (the folder, or an unpacked / joined copy)
    spec: str
    group: str  # which machine: a sub-folder, a sosreport, a vm-support bundle ("" = the folder itself)
    params: dict[str, str] = field(default_factory=dict)
    head: str = ""  # the first KiB of text, for names and ports printed inside
    ended: str | None = None  # when it was taken, if the source says so (a sosreport's date)
    sample: int | None = None
    origin: str = "file content"  # how its kind was known
    target: str | None = None  # the target id, once assign_targets has placed it
    machine: str | None = None  # the name the source gives its machine (a sosreport's hostname)


class IntakeError(BundleError):
    """The folder cannot be turned into a bundle without guessing: the message says what to rename or add."""


def under(prefix: str, rest: str) -> str:
    return f"{prefix}/{rest}" if prefix else rest


def read_head(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes: files from a stranger's directory can be of any size."""
    with open(path, "rb") as fh:
        return fh.read(limit)
