"""esxdiag command line (placeholder wiring; filled in by the analyze/collect commands)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from esxdiag import __version__

    print(f"esxdiag {__version__}", file=sys.stderr)
    return 0
