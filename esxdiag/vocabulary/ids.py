"""The base of every id enum: a str (JSON, dict keys, comparisons with plain strings) that prints as its
value in f-strings, str() and templates on every supported Python (3.10 has no enum.StrEnum)."""

from __future__ import annotations

from enum import Enum


class Id(str, Enum):
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
