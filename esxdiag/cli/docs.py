"""`esxdiag help [TOPIC]`: the documentation shipped with the package (esxdiag.docs, the repository's
docs/ folder), so an installed esxdiag can show the bundle format its messages point to."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from esxdiag.errors import EXIT_OK, EsxdiagError

TOPICS = {
    "bundle-format": "the bundle directory and manifest.json; assembling one by hand; damaged captures",
    "report-schema": "the report's JSON: verdicts, evidence, coverage statuses, rules and thresholds",
    "fleet-scan": "esxdiag scan: the snapshot, the fleet report and history",
    "parsers": "every parser kind of `esxdiag parse` and the command output it reads",
}


def register(sub) -> None:
    h = sub.add_parser("help", help="show the documentation shipped with esxdiag (bundle-format, report-schema, ...)")
    h.add_argument("topic", nargs="?", choices=sorted(TOPICS), metavar="TOPIC",
                   help="one of: " + ", ".join(sorted(TOPICS)) + " (none: list them)")
    h.set_defaults(func=cmd_help)


def doc_text(topic: str) -> str:
    """The text of one shipped document."""
    try:
        return resources.files("esxdiag.docs").joinpath(f"{topic}.md").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise EsxdiagError(f"the {topic} documentation is not installed with this esxdiag ({exc})") from None


def cmd_help(args: argparse.Namespace) -> int:
    if args.topic is None:
        for topic, about in TOPICS.items():
            print(f"esxdiag help {topic:14} {about}")
        return EXIT_OK
    sys.stdout.write(doc_text(args.topic))
    return EXIT_OK
