"""One capture found in a folder, a sosreport or a vm-support bundle, before it has a target."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from esxdiag.errors import BundleError
from esxdiag.specs import SPECS


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


class Questions(IntakeError):
    """Every file of a folder that cannot be placed, each with what fixes it, asked in one run."""

    def __init__(self, folder: str, asked: list[str]):
        self.asked = asked
        head = (f"{folder}: {len(asked)} file(s) cannot be placed without guessing; rename each as said (or write "
                "manifest.json by hand: esxdiag help bundle-format), then run again:")
        super().__init__("\n".join([head] + [f"  {question}" for question in asked]))

    def one_line(self) -> str:
        return "\n".join(" ".join(line.split()) if n == 0 else "  " + " ".join(line.split())
                         for n, line in enumerate(str(self).splitlines()))


class Listed(IntakeError):
    """A one-line error followed by the items it lists, one per line (the bundles of a folder of bundles)."""

    def __init__(self, head: str, items: list[str]):
        super().__init__("\n".join([head] + [f"  {item}" for item in items]))

    def one_line(self) -> str:
        return "\n".join(" ".join(line.split()) if n == 0 else "  " + " ".join(line.split())
                         for n, line in enumerate(str(self).splitlines()))


def kind(spec: str) -> str:
    """The name a user types: the `esxdiag parse` kind of a spec (vsish_rxsummary -> vsish-rxsummary)."""
    return SPECS[spec].parser if spec in SPECS else spec


def renamed(rel: str, insert: str) -> str:
    """``rel`` with ``-insert`` before its extension: after-rxsummary.txt -> after-rxsummary-33554464.txt."""
    head, slash, name = rel.rpartition("/")
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    return f"{head}{slash}{stem}-{insert}{'.' + ext if ext else ''}"


def under(prefix: str, rest: str) -> str:
    return f"{prefix}/{rest}" if prefix else rest


def read_head(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes: files from a stranger's directory can be of any size."""
    with open(path, "rb") as fh:
        return fh.read(limit)
