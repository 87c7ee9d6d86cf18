"""``vsish -pe get`` ("python mode", formats.md 2.4): optional warning lines, then a Python-ish
dict with a trailing comma, ``true``/``false``/``null`` and raw newlines inside string values -
not JSON. Read with ``ast.literal_eval`` (never ``eval``) after escaping those newlines; only
plain values are accepted, and the input is size-capped (ast's parser is not linear on odd
input, and a node is a few KiB)."""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.registry import parser

# python mode: a string literal (kept as is, raw newlines escaped) or a JSON-style bare word
_PY_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\b(?:true|false|null)\b', re.S)
_PY_WORDS = {"true": "True", "false": "False", "null": "None"}
PYTHON_MODE_MAX_CHARS = 256 << 10


@dataclass(frozen=True)
class VsishDict:
    values: dict
    warnings: tuple[str, ...]  # lines printed before the dict (the deprecation notice)


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
    notes = tuple(line.strip() for line in lines[:start] if line.strip())
    body = "".join(lines[start:])
    if len(body) > PYTHON_MODE_MAX_CHARS:  # ast's parser is not linear on odd input; a node is a few KiB
        raise ParseError(f"python-mode dict of {len(body)} characters (at most {PYTHON_MODE_MAX_CHARS})",
                         line=start + 1)
    string_spans: list[tuple[int, int]] = []

    def fix(match: re.Match) -> str:
        token = match.group(0)
        if token[0] in "\"'":
            string_spans.append(match.span())
            return token.replace("\r", "\\r").replace("\n", "\\n")
        return _PY_WORDS[token]

    fixed = _PY_TOKEN.sub(fix, body)
    try:
        value = ast.literal_eval(fixed)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = None if line is None else start + _original_line(body, string_spans, line)
        raise ParseError(f"python-mode dict does not parse ({getattr(exc, 'msg', exc)})", line=where) from None
    if not isinstance(value, dict):
        raise ParseError(f"python-mode output is a {type(value).__name__}, expected a dict", line=start + 1)
    _check_plain(value, start + 1)
    if not value:
        raise NoData("vsish python-mode dict is empty")
    return VsishDict(value, notes)


def _check_plain(value, line: int) -> None:
    """literal_eval also builds sets, bytes, complex numbers and inf (``1e999``): not vsish data."""
    stack = [value]
    while stack:  # iterative: nesting is bounded by the parser, width is not
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ParseError(f"python-mode value {item} is not a finite number", line=line)
        elif not isinstance(item, (str, int, float, bool, type(None))):
            raise ParseError(f"python-mode value of type {type(item).__name__} is not vsish data", line=line)


def _original_line(body: str, string_spans: list[tuple[int, int]], fixed_line: int) -> int:
    """Line ``fixed_line`` of the escaped text as a line of ``body``: escaping removed the raw
    newlines inside strings, so only newlines outside string literals advance the count."""
    inside = {i for a, b in string_spans for i in range(a, b) if body[i] == "\n"}
    outside = [i for i, ch in enumerate(body) if ch == "\n" and i not in inside]
    if fixed_line <= 1 or not outside:
        return 1
    newline_at = outside[min(fixed_line - 1, len(outside)) - 1]
    return body.count("\n", 0, newline_at) + 2
