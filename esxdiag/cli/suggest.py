"""Typos on the command line get the command's own usage and the closest names: argparse (before Python
3.14) prints the top-level usage for an unknown option of a sub-command and suggests nothing."""

from __future__ import annotations

import argparse
import difflib
import re

INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors say what was probably meant."""

    def error(self, message: str):  # type: ignore[override]
        super().error(message + did_you_mean(self, message))


def did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    choice = INVALID_CHOICE.search(message)
    if choice is not None:
        names = re.findall(r"'([^']*)'", choice["choices"])
        return _suggest(choice["given"], names)
    if message.startswith("unrecognized arguments:"):
        options = [s for s in parser._option_string_actions if s.startswith("--") and s != "--help"]
        hints = [_suggest(word.split("=", 1)[0], options) for word in message.split(":", 1)[1].split()
                 if word.startswith("-")]
        return "".join(h for h in hints if h)
    return ""


def _suggest(given: str, names: list[str]) -> str:
    """The closest names, compared without their leading dashes (every option shares those)."""
    bare = {name.lstrip("-"): name for name in names}
    word = given.lstrip("-")[:64]  # a typo, not a paragraph: the distance is quadratic
    near = sorted((d, name) for name in bare if (d := edits(word, name)) <= (2 if len(name) >= 4 else 1))
    close = list(dict.fromkeys([name for _, name in near] + difflib.get_close_matches(word, list(bare), 3, 0.7)))[:3]
    return f" (did you mean {' or '.join(bare[c] for c in close)}?)" if close else ""


def edits(a: str, b: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two neighbours
    (the commonest typos: --windw, --fromat)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub-)command parser that read ``args``: its usage is the one to show for an unknown option."""
    current = parser
    for dest in ("command", "bundle_command"):
        name = getattr(args, dest, None)
        subparsers = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if name is None or subparsers is None or name not in subparsers.choices:
            break
        current = subparsers.choices[name]
    return current
