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


PARTIAL = """
## Partial reads: what a parser does with a capture that is not whole

Admins bring captures copied from terminals, tickets and forum threads. Every parser reads what it
can and names the rest in the record's `warnings` (with line numbers); a capture with several
records is never refused because one of them is damaged.

- **Prompts around a paste.** The shell prompt and command line above the output (`[root@esx01:~]
  vsish -e get ...`, `user@guest:~$ ethtool -g eth0`, `[root@rhel ~]# ...`, `$ ethtool -S eth0`,
  `PS C:\\> Get-NetAdapterRss`), banners and
  termcap complaints are left out; the first prompt after the output ends it, and the lines after it
  (the next command's output) are not read. Each is said as a warning; the content sniffers of a
  folder of captures see the capture the same way.
- **Cut marks.** An author's `...`, `[snip]`, `<output omitted>`, `--More--` on a line of its own is
  skipped with a warning naming its line: what it hid is not in the capture, the lines around it are
  read (in a CSV too; in a `ConvertTo-Json` array, the objects whole before the cut). A last line
  without a line end (a capture cut inside a value) is not read.
- **Unknown lines.** A line that is not of the kind is skipped with a warning quoting it; a parse that
  kept fewer lines than it skipped is refused, naming the first unreadable line (then the capture is
  not of this kind).
- **PowerShell Format-List.** A record ends at a blank line, where its first property (`Name` in
  the default views) is printed again, or where a property it already holds comes again further down
  (the same property on two lines in a row stays one property: kept when both agree, left out when
  they differ), so records pasted without blank lines between them are read one by one. A blank line inside one object (the default `Get-NetAdapterRss` view prints one before
  `IndirectionTable`) does not end it, and a value runs on over indented lines and over rows that
  start with no property name (the `RssProcessorArray` and `IndirectionTable` tables). A table value
  at the very end of a capture with no blank line after it may have lost rows: it is left out with a
  warning. A record with no `Name` is left out with a warning naming its line; the others are read.
- **PowerShell default tables.** Values cut to the console width (`...`, `…`) in a column the parser
  can do without are read as empty with a warning naming the column and the command that prints every
  value whole. In `Get-NetAdapterAdvancedProperty`, a cut `RegistryKeyword` is keyed by the row's
  English `DisplayName`, and a row with another cut value is left out on its own; only a table with no
  whole row is refused. A cut MAC address in `Get-NetAdapter` still refuses the capture (the MAC is
  what joins the guest to its vNIC).
- **esxtop screens.** A header cut by the console's width (`MbRX/`) leaves its last column out, and
  the rows' last value with it; `%DRPRX` is None when the paste does not reach it.
- **vCenter events as text.** A migration's VM and hosts are read from vCenter's wording only when the
  message reads one way; times are kept as printed (neither govc nor PowerShell prints a zone), so a
  folder of captures lists the migrations in its unused files instead of placing them in the window.
- **Rename advice.** Where the intake cannot tell which interface, port, uplink or world a capture
  is of, it asks for a rename; the name it proposes says exactly one, and a file renamed that way is
  read on the next run.
"""


def render() -> str:
    rows = []
    for kind, entry in sorted(PARSERS.items()):
        specs = ", ".join(f"`{name}`" for name, spec in SPECS.items() if spec.parser == kind) or "-"
        about = entry.about.replace("|", "\\|") + (" (streamed)" if entry.streaming else "")
        rows.append(f"| `{kind}` | {about} | esxdiag/parsers/{entry.module}.py | {specs} |\n")
    return HEADER + "".join(rows) + PARTIAL


if __name__ == "__main__":
    sys.stdout.write(render())
