"""Captures cut short. Every command the collectors run ends its output with a line end, so
a capture whose last line has none was cut inside that line (a size cap, an interrupted copy,
a paste that stopped mid-number): the value on it is not trusted. A counter cut from 2,103 to
21 would read as a counter reset and invent a delta, so counter parsers drop such a line with a
warning instead of reading it."""

from __future__ import annotations

import re

from esxdiag.errors import ParseError


def drop_cut_line(text: str, keep: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """(text without its last line when that line has no line end, warnings). A last line equal
    (stripped) to one of ``keep`` (a closing ``}``) is structure, not a value, and stays."""
    if not text or text.endswith(("\n", "\r")):
        return text, []
    head, _, last = text.rpartition("\n")
    if not last.strip() or last.strip() in keep:
        return text, []
    number = head.count("\n") + 2 if head or text.startswith("\n") else 1
    shown = last.strip()[:60]
    return head + "\n" if head else "", [f"line {number} has no line end (capture cut short?): "
                                          f"{shown!r} not used"]


# ---------------------------------------------------------------- lines skipped around a cut

# What authors put where they cut a paste: "...", "[snip]", "<output omitted>", "//output hidden//",
# a pager's "--More--". Matched on the stripped line, case-insensitively; a bounded alternation.
_CUT_MARK = re.compile(
    r"(?:\.\s?){3,}|\u2026+|#\s*(?:\.{3}|\u2026)|--More--(?:\s*\(\d{1,3}%\))?|-{2,}\s*8<\s*-*|"
    r"[\[<(]\s*(?:\.{3}|\u2026|snip(?:ped)?|(?:output|lines?|rest)\s+(?:omitted|truncated|hidden|removed|cut)"
    r"|truncated|omitted)\s*[\]>)]|"
    r"/{2}\s*output\s+(?:hidden|omitted|truncated)\s*/{2}|-{2,}\s*snip\s*-{2,}|snip", re.I)


def is_cut_mark(line: str) -> bool:
    """An author's cut mark on a line of its own (stripped): ``...``, ``[snip]``, ``--More--``."""
    stripped = line.strip()
    return len(stripped) <= 40 and _CUT_MARK.fullmatch(stripped) is not None


class Skipped:
    """The lines one parse could not read, each skipped with a warning naming its line and text: an
    author's cut mark, or a line that is not of the kind (the parser's own ParseError for it). The
    records around them are kept; ``check(kept)`` raises the first unreadable line's error when the
    parse kept fewer lines than it skipped (then the capture is not of this kind, or mostly damage).
    A bad value on a line of the right shape (a negative counter) is not skipped: it stays an error."""

    def __init__(self, warnings: list[str]):
        self.warnings = warnings  # the record's warnings list, shared
        self.errors: list[ParseError] = []  # unreadable lines, in order
        self.marks: list[int] = []  # lines holding a cut mark

    def __len__(self) -> int:
        return len(self.errors) + len(self.marks)

    def cut_mark(self, number: int, line: str) -> bool:
        """Skip ``line`` with a warning when it is a cut mark or terminal junk (True), else False."""
        if is_terminal_junk(line):
            self.marks.append(number)
            self.warnings.append(junk_warning(number, line))
            return True
        if not is_cut_mark(line):
            return False
        self.marks.append(number)
        self.warnings.append(f"line {number}: cut mark {line.strip()!r} skipped: what it hides is not in the "
                             "capture (the lines around it are read)")
        return True

    def line(self, error: ParseError, started: bool = True) -> None:
        """Skip the line ``error`` is about, with a warning quoting it; before the parse has read
        anything (``started`` false) an unknown line says the capture is not of this kind: raised."""
        if not started:
            raise error
        self.errors.append(error)
        self.warnings.append(f"line {error.line}: skipped, {error.why}")

    def check(self, kept: int) -> None:
        if not len(self) or kept >= len(self):
            return
        if not self.errors:
            raise ParseError(f"only cut marks and {kept} readable line(s): nothing usable", line=self.marks[0])
        first = self.errors[0]
        more = f" ({len(self) - 1} more line(s) not readable, {kept} read)" if len(self) > 1 else ""
        raise ParseError(first.why + more, line=first.line)


# ---------------------------------------------------------------- terminal junk before the data

# What a terminal or shell prints around a command run over SSH: curses' complaints about TERM, a
# shell prompt with the command after it, the host's login banner. Bounded patterns, one line each.
_TERMINAL_JUNK = re.compile(
    r"no termcap entry for an? .{1,60} terminal\.?|TERM environment variable not set\.?|"
    r"'?[\w.+-]{1,40}'?: unknown terminal type\.?|Error opening terminal: [\w.+-]{1,40}\.?|"
    r"(?:tput|stty|tset): .{1,120}|"
    r"\[[\w.@-]{1,80}:[^\]\n]{0,120}\][#$]? .{0,400}|~ [#$] .{0,400}|[\w.-]{1,40}@[\w.-]{1,80}:[^\s#$]{0,120}[#$] .{0,400}|"
    r"PS [A-Za-z]:\\[^>\n]{0,200}> .{0,400}|"
    r"The time and date of this login have been sent to the system logs\.|"
    r"WARNING:\s+All commands run on the ESXi shell are logged.{0,200}|"
    r"VMware offers (?:supported, )?powerful system administration tools\..{0,200}|"
    r"(?:Please see|Please refer to) .{0,120}(?:vmware|VMware).{0,200}|Last login: .{1,200}|"
    r"Welcome to VMware ESXi.{0,200}|Using username \".{1,80}\"\.|Keyboard-interactive authentication.{0,80}")


def is_terminal_junk(line: str) -> bool:
    """A line the terminal, the shell or the login banner printed, not the command."""
    stripped = line.strip()
    return len(stripped) <= 600 and _TERMINAL_JUNK.fullmatch(stripped) is not None


def junk_warning(number: int, line: str) -> str:
    return f"line {number}: terminal output skipped (not the command's): {line.strip()[:80]!r}"


# ---------------------------------------------------------------- the prompts around a pasted output

# A shell prompt, bare or with the command typed after it: ESXi's "[root@esx01:~]", an old ESXi
# "~ #", a Linux "user@host:~$", "root@host:/tmp#" or "[root@centos7 ~]#", a forum post's "$ ethtool -g
# eth0", PowerShell's "PS C:\Users\admin>" or "PS /home/admin>". A user@host is required in the
# bracketed form ("[Group:Number]" is a PowerShell value), and a lone "#" is never one (vsish prints
# "# of times the 1st ring is full", nstat "#kernel").
_PROMPT = re.compile(
    r"(?:\[[\w.-]{1,40}@[\w.-]{1,80}[: ][^\]\n]{0,120}\][#$]?|~ ?[#$]|[\w.-]{1,40}@[\w.-]{1,80}:[^\s#$]{0,120}[#$]|"
    r"PS (?:[A-Za-z]:\\|/)[^>\n]{0,200}>|\$)(?: .{0,400})?")


def is_prompt(line: str) -> bool:
    """A shell prompt line, with or without a command after it."""
    stripped = line.strip()
    return len(stripped) <= 600 and _PROMPT.fullmatch(stripped) is not None


def unwrap_prompts(text: str) -> tuple[str, list[str]]:
    """A paste copied from a terminal with the prompt and command line above the output and the
    next prompt below it: (the text with those lines blanked, line numbers kept; a note for each).
    Terminal lines before the output (prompt, banner, termcap complaint) are blanked; the first
    prompt after the output began ends it, and what follows (the next command's output) is not
    read. A text without such lines comes back unchanged."""
    notes: list[str] = []
    head: list[str] = []
    at, number = 0, 0
    while at < len(text) and number < _HEAD_LINES:  # the lines before the output: a few at most
        end = text.find("\n", at)
        end = len(text) if end < 0 else end + 1
        line, number = text[at:end], number + 1
        if line.strip() and not (is_terminal_junk(line) or is_prompt(line)):
            break
        if line.strip():
            notes.append(junk_warning(number, line))
        head.append(_blank(line))
        at = end
    body, tail = text[at:], ""
    for candidate in _PROMPT_LINE.finditer(body):
        if candidate.start() > 0 and is_prompt(candidate.group()):
            later = body[candidate.start():]
            number = len(head) + body.count("\n", 0, candidate.start()) + 1
            rest = sum(1 for line in later.splitlines()[1:] if line.strip())
            notes.append(f"line {number}: a shell prompt ({candidate.group().strip()[:60]!r}) ends the command's "
                         "output: " + (f"it and the {rest} line(s) after it are not read" if rest else "not read"))
            tail = "".join(_blank(line) for line in later.splitlines(keepends=True))
            body = body[:candidate.start()]
            break
    return ("".join(head) + body + tail, notes) if notes else (text, [])


_HEAD_LINES = 50  # terminal lines looked for before the output (a banner is a dozen)
# lines that may be a prompt (a user@host, a "~", a "PS ", a "$"): found by one scan, then tested one by one
_PROMPT_LINE = re.compile(r"(?m)^[^\S\n]{0,40}(?:[^\n@]{0,200}@|~|PS |\$)[^\n]*")  # bounded: no backtracking over a long line


def _blank(line: str) -> str:
    """An empty line with ``line``'s line end (line numbers stay as the user sees them)."""
    return line[len(line.rstrip("\r\n")):]
