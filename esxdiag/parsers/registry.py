r"""Each parser says what it is, once, next to its function: ``@parser(kind, about=..., sniff=...,
sample=...)``. ``esxdiag.parsers.PARSERS``, ``esxdiag parse --list``, the intake's content
sniffers and docs/parsers.md are all read from these declarations.

A sniffer looks at the first few KiB of a capture and says whether it is this kind: it looks for
what the command itself prints (headers, block titles, key names), never for values, so it holds
on real captures from any host. The helpers below build the usual tests. Multi-line patterns
match blanks with [^\S\r\n] (NBSP too, never a line end), not \s: \s* at every line start of a
head full of newlines is quadratic.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

from esxdiag.parsers.cuts import is_terminal_junk

Sniffer = Callable[[str], bool]
_DECLARED = "__parser_entries__"  # the attribute @parser sets on the function it declares


@dataclass(frozen=True)
class ParserEntry:
    kind: str
    module: str  # the module under ``package`` that defines the function
    function: str
    about: str  # one line: the command output it reads
    sniff: Sniffer = field(repr=False, compare=False)  # head of a capture -> is it this kind
    sample: str = field(repr=False)  # a short capture shaped like the real output, parsed by the tests
    streaming: bool = False  # takes an open text stream (esxtop), not a string
    package: str = "esxdiag.parsers"

    def load(self) -> Callable[..., Any]:
        """The function, looked up by name at each call (so a test can stand in for it)."""
        module = f"{self.package}.{self.module}" if self.package else self.module
        return getattr(importlib.import_module(module), self.function)


def parser(kind: str, *, about: str, sniff: Sniffer, sample: str, streaming: bool = False):
    """Declare the decorated function as the parser of ``kind``; the function is returned unchanged."""
    def declare(func: Callable[..., Any]) -> Callable[..., Any]:
        package, _, module = func.__module__.rpartition(".")
        entry = ParserEntry(kind, module, func.__name__, about, sniff, sample, streaming, package)
        setattr(func, _DECLARED, (*getattr(func, _DECLARED, ()), entry))
        return func

    return declare


def declared_in(module: ModuleType) -> list[ParserEntry]:
    """The kinds a module declares, in the order its functions are defined (not those it imports)."""
    return [entry for value in vars(module).values() if getattr(value, "__module__", None) == module.__name__
            for entry in getattr(value, _DECLARED, ())]


def collect(modules: tuple[str, ...]) -> dict[str, ParserEntry]:
    """kind -> entry for every kind these esxdiag.parsers modules declare, in module order; a kind
    declared twice is an error."""
    table: dict[str, ParserEntry] = {}
    for name in modules:
        for entry in declared_in(importlib.import_module(f"esxdiag.parsers.{name}")):
            if entry.kind in table:
                raise ValueError(f"parser kind {entry.kind!r} declared twice ({table[entry.kind].module}, {name})")
            table[entry.kind] = entry
    return table


# --- sniff helpers: each returns a test of the head of a capture ---

def lines(head: str) -> list[str]:
    """The first 200 non-blank lines, after any terminal output before the command's own (a
    termcap complaint, a shell prompt, the login banner: esxdiag.parsers.cuts)."""
    found = [line for line in head.splitlines() if line.strip()]
    start = 0
    while start < len(found) and start < 20 and is_terminal_junk(found[start]):
        start += 1
    return found[start:start + 200]


def has(*needles: str) -> Sniffer:
    """Every needle appears somewhere in the head (block titles, key names)."""
    return lambda head: all(n in head for n in needles)


def first_line(pattern: str, flags: int = 0) -> Sniffer:
    """The first non-blank line matches."""
    rx = re.compile(pattern, flags)

    def test(head: str) -> bool:
        found = lines(head)
        return bool(rx.match(found[0] if found else ""))

    return test


def all_lines(pattern: str) -> Sniffer:
    """Each of the first 200 non-blank lines matches once stripped, and there is at least one."""
    rx = re.compile(pattern)

    def test(head: str) -> bool:
        found = lines(head)
        return bool(found) and all(rx.match(line.strip()) for line in found)

    return test


def json_schema(tag: str) -> Sniffer:
    """A JSON document whose first key is ``"schema": tag`` (the files esxdiag itself writes)."""
    rx = re.compile(r'^\s*\{\s*"schema"\s*:\s*"' + re.escape(tag) + '"')
    return lambda head: bool(rx.match(head))


def win(*keys: str) -> Sniffer:
    """PowerShell output in any of CSV, JSON, Format-List or table form: the property names."""
    return lambda head: all(re.search(r"(?m)(^|[\"\s,])" + re.escape(k) + r"([\"\s:,]|$)", head) for k in keys)


def one_integer(head: str) -> bool:
    """The whole capture is one integer (nproc, a PowerShell count)."""
    found = lines(head)
    return len(found) == 1 and found[0].strip().isdigit()
