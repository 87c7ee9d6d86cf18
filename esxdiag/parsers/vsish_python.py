"""``vsish -pe get`` ("python mode", formats.md 2.4): optional warning lines, then a Python-ish
dict with a trailing comma, ``true``/``false``/``null`` and raw newlines inside string values -
not JSON. Read by a small tokenizer and an iterative parser written for exactly that grammar
(strings, numbers, the six bare words, ``{}`` and ``[]``), one pass over the text: no ``ast``
(whose parser is neither linear nor memory-bounded on crafted input such as a long chain of
unary operators), no recursion, nesting bounded."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterator

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.registry import parser
from esxdiag.parsers.repeats import Agreeing

MAX_DEPTH = 32  # a vsish node nests two or three levels
_MAX_INT_DIGITS = 40
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WORD = re.compile(r"[A-Za-z_]+")
_WORDS = {"true": True, "True": True, "false": False, "False": False, "null": None, "None": None}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
_CLOSER = {"{": "}", "[": "]"}


@dataclass(frozen=True)
class VsishDict:
    values: dict
    warnings: tuple[str, ...]  # lines printed before the dict (the deprecation notice), repeated keys


_SAMPLE = """\
main():Python mode is deprecated and will be removed in future releases. You can use pyvsilib instead.
{
   "dumsw" : "",
   "rxpkt" : 46037587,
   "txpkt" : 39956093,
   "rxerr" : 0,
   "rxdrp" : 0,
   "txdrp" : 0,
   "hw" : "Packets assigned to an invalid queue: 0
rxq0: totalPkts=3062 totalBytes=671999 nonEopDescs=0 allocRxBufFail=0 csumErr=0

Rx Length Errors: 0
",
}
"""
_DICT_START = re.compile(r'^\s*\{\s*\n\s*"\w+" : ')


def _sniff(head: str) -> bool:
    return "Python mode is deprecated" in head[:400] or bool(_DICT_START.match(head))


@parser("vsish-python", about="vsish -pe get: python-mode dict of one node (e.g. a pNic's stats)",
        sniff=_sniff, sample=_SAMPLE)
def parse_python_mode(text: str) -> VsishDict:
    """``vsish -pe get``: optional warning lines, then a dict with a trailing comma and raw
    newlines inside string values (not JSON)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("{", "["))), None)
    if start is None:
        if not text.strip():
            raise NoData("empty vsish output")
        raise ParseError("no '{' found: not vsish -pe (python mode) output", line=1)
    warnings = [line.strip() for line in lines[:start] if line.strip()]
    value = _read("".join(lines[start:]), start + 1, warnings)
    if not isinstance(value, dict):
        raise ParseError(f"python-mode output is a {type(value).__name__}, expected a dict", line=start + 1)
    if not value:
        raise NoData("vsish python-mode dict is empty")
    return VsishDict(value, tuple(warnings))


def _error(why: str, line: int) -> ParseError:
    return ParseError(f"python-mode dict does not parse ({why})", line=line)


def _tokens(body: str, line: int) -> Iterator[tuple[str, Any, int]]:
    """(kind, value, line): kind is a bracket, ':' or ',' (value None), or 'value'."""
    at, end = 0, len(body)
    while at < end:
        ch = body[at]
        if ch == "\n":
            line += 1
        elif ch in "{}[]:,":
            yield ch, None, line
        elif ch in "\"'":
            value, after = _string(body, at, line)
            yield "value", value, line
            line += body.count("\n", at, after)
            at = after
            continue
        elif number := _NUMBER.match(body, at):
            yield "value", _number(number, line), line
            at = number.end()
            continue
        elif word := _WORD.match(body, at):
            if word.group() not in _WORDS:
                raise _error(f"bare word {word.group()[:40]!r}: only strings, numbers, true/false/null", line)
            yield "value", _WORDS[word.group()], line
            at = word.end()
            continue
        elif not ch.isspace():
            raise _error(f"unexpected {body[at:at + 20]!r}", line)
        at += 1


def _string(body: str, start: int, line: int) -> tuple[str, int]:
    """The string literal at ``start`` (raw newlines kept) and the index after its closing quote.
    Linear: the closing quote is looked for again only when an escape consumed it."""
    quote, parts, at = body[start], [], start + 1
    close = body.find(quote, at)
    while True:
        if close < 0:
            raise ParseError("python-mode string opened on this line is never closed (capture cut short?)",
                             line=line)
        slash = body.find("\\", at, close)
        if slash < 0:
            parts.append(body[at:close])
            return "".join(parts), close + 1
        parts.append(body[at:slash])
        escaped = body[slash + 1]
        parts.append(_ESCAPES.get(escaped, "\\" + escaped))
        at = slash + 2
        if at > close:
            close = body.find(quote, at)


def _number(match: re.Match, line: int) -> int | float:
    text = match.group()
    if match.group(1) is None and match.group(2) is None:
        if len(text.lstrip("-")) > _MAX_INT_DIGITS:
            raise _error(f"integer of {len(text)} digits", line)
        return int(text)
    if len(text) > 400:
        raise _error(f"number of {len(text)} characters", line)
    value = float(text)
    if not math.isfinite(value):
        raise ParseError(f"python-mode value {text[:40]} is not a finite number", line=line)
    return value


class _Frame:
    """An open ``{`` or ``[``: what it holds and what may come next (key, ':', value, ',')."""

    def __init__(self, opener: str, line: int, warnings: list[str]):
        self.opener, self.line = opener, line
        self.items: Agreeing | list = Agreeing(warnings) if opener == "{" else []
        self.expect = "key" if opener == "{" else "value"
        self.key: str | None = None
        self.may_close = True  # right after the opener or a comma (trailing commas are printed)

    def add(self, value: Any, line: int) -> None:
        if isinstance(self.items, list):
            self.items.append(value)
        else:
            self.items.put(self.key, value, f"line {line}", f"key {self.key!r}")
        self.expect, self.may_close = ",", False


def _read(body: str, first_line: int, warnings: list[str]) -> Any:
    stack: list[_Frame] = []
    done, root = False, None
    for kind, value, line in _tokens(body, first_line):
        if done:
            raise _error(f"text after the closing bracket: {kind if value is None else repr(value)[:40]}", line)
        frame = stack[-1] if stack else None
        expect = frame.expect if frame else "value"
        if kind in "}]" and frame and kind == _CLOSER[frame.opener] and (frame.may_close or expect == ","):
            stack.pop()
            items = frame.items if isinstance(frame.items, list) else dict(frame.items)
            if stack:
                stack[-1].add(items, line)
            else:
                done, root = True, items
        elif frame is not None and expect == "key" and kind == "value" and isinstance(value, str):
            frame.key, frame.expect, frame.may_close = value, ":", False
        elif frame is not None and expect == ":" and kind == ":":
            frame.expect = "value"
        elif frame is not None and expect == "," and kind == ",":
            frame.expect, frame.may_close = ("key" if frame.opener == "{" else "value"), True
        elif expect == "value" and kind in "{[":
            if len(stack) >= MAX_DEPTH:
                raise _error(f"nested more than {MAX_DEPTH} levels deep", line)
            stack.append(_Frame(kind, line, warnings))
        elif expect == "value" and kind == "value":
            if frame:
                frame.add(value, line)
            else:
                done, root = True, value
        else:
            shown = kind if value is None else repr(value)[:40]
            raise _error(f"expected {expect}, got {shown}", line)
    if stack:
        raise ParseError(f"python-mode '{stack[-1].opener}' opened on line {stack[-1].line} is never closed "
                         "(capture cut short?)", line=stack[-1].line)
    if not done:
        raise _error("no value", first_line)
    return root
