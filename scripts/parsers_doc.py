"""Print docs/parsers.md: every declared parser kind, what it reads and which specs collect it.

    python scripts/parsers_doc.py > docs/parsers.md

tests/parsers/test_declarations.py fails when the file differs from this output.
"""

from __future__ import annotations

import sys

from esxdiag.parsers import PARSERS
from esxdiag.specs import SPECS

HEADER = """\
# Parser kinds

Generated from the `@parser(...)` declarations in esxdiag/parsers/ and from esxdiag/specs.py by
`python scripts/parsers_doc.py > docs/parsers.md` (a test fails when this file is stale). Read
one capture with `esxdiag parse KIND FILE`; a folder of captures without a manifest is sorted
by the same declarations' content sniffers. A kind no spec collects is read from captures made
by hand.

| kind | reads | declared in | collected as (specs) |
|---|---|---|---|
"""


def render() -> str:
    rows = []
    for kind, entry in sorted(PARSERS.items()):
        specs = ", ".join(f"`{name}`" for name, spec in SPECS.items() if spec.parser == kind) or "-"
        about = entry.about.replace("|", "\\|") + (" (streamed)" if entry.streaming else "")
        rows.append(f"| `{kind}` | {about} | esxdiag/parsers/{entry.module}.py | {specs} |\n")
    return HEADER + "".join(rows)


if __name__ == "__main__":
    sys.stdout.write(render())
