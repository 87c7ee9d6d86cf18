"""The rule for a value printed twice in one capture (a repeated counter line, property or ring
size): never "last one wins" silently. Both copies agree: the value is kept, with a warning.
They differ: the right one cannot be known, so the key is left out (it reads as not captured),
with a warning naming both values."""

from __future__ import annotations

from typing import Any


class Agreeing(dict):
    """A dict filled through ``put``; ``warnings`` is shared with the caller's list."""

    def __init__(self, warnings: list[str]):
        super().__init__()
        self.warnings = warnings
        self.ambiguous: set[Any] = set()

    def put(self, key: Any, value: Any, where: str, label: str | None = None) -> None:
        shown = label or repr(key)
        if key in self.ambiguous:
            return
        if key in self and self[key] != value:
            self.warnings.append(f"{where}: {shown} printed twice with different values "
                                 f"({str(self[key])[:40]}, {str(value)[:40]}): not used")
            self.ambiguous.add(key)
            del self[key]
        else:
            if key in self:
                self.warnings.append(f"{where}: {shown} printed twice")
            self[key] = value
