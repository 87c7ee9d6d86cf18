"""JSON captures (``ethtool -j``, ``nstat -j``, ``ConvertTo-Json``, ``net-stats -A``, the vSphere
captures) read one way: ``NaN``/``Infinity``/``1e999`` and integers of more than 40 digits are a
ParseError, nesting too deep for the decoder is a ParseError, and a key repeated inside one
object follows esxdiag.parsers.repeats (kept when both copies agree, left out when they differ,
with a warning), or is a ParseError when ``strict``."""

from __future__ import annotations

import json
import math
from typing import Any, Callable

from esxdiag.errors import ParseError
from esxdiag.parsers.repeats import Agreeing

_MAX_INT_DIGITS = 40


def load_json(text: str, what: str, strict: bool = False,
              object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> tuple[Any, list[str]]:
    """(document, warnings). ``object_pairs_hook`` replaces the duplicate-key handling."""
    warnings: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
        result = Agreeing(warnings)
        for key, value in pairs:
            if strict and key in result:
                raise ParseError(f"{what}: key {key!r} repeated in one object")
            result.put(key, value, f"{what} JSON", f"key {key!r}")
        return dict(result)

    try:
        document = json.loads(text, object_pairs_hook=object_pairs_hook or pairs_hook,
                              parse_constant=_constant, parse_int=_int, parse_float=_float)
    except json.JSONDecodeError as exc:
        cut = " (output truncated?)" if exc.pos >= len(text.rstrip()) - 1 else ""
        raise ParseError(f"not valid {what} JSON: {exc.msg}{cut}", line=exc.lineno) from None
    except RecursionError:
        raise ParseError(f"{what} JSON is nested too deeply") from None
    return document, list(dict.fromkeys(warnings))


def _constant(name: str) -> Any:
    raise ParseError(f"JSON holds {name}: not a number")


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT_DIGITS:
        raise ParseError(f"JSON integer of {digits} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > 400:
        raise ParseError(f"JSON number of {len(text)} characters")
    value = float(text)
    if not math.isfinite(value):
        raise ParseError(f"JSON number {text[:40]!r} is not finite")
    return value
