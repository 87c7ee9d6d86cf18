"""`esxdiag help [TOPIC]`: the documentation shipped with the package (esxdiag.docs, the repository's
docs/ folder), so an installed esxdiag can show the bundle format its messages point to."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from esxdiag.errors import EXIT_OK, EsxdiagError

ABOUT = {  # a line for each shipped document; a document without one is still a topic
    "diagnosis": "how a drop is diagnosed: every cause, its counters, thresholds and remedy; the drop ledger",
    "bundle-format": "the bundle directory and manifest.json; assembling one by hand; damaged captures",
    "report-schema": "the report's JSON: verdicts, evidence, coverage statuses, rules and thresholds",
    "fleet-scan": "esxdiag scan: the snapshot, the fleet report and history",
    "parsers": "every parser kind of `esxdiag parse` and the command output it reads",
    "raw-formats": "what each command esxdiag parses prints, and the quirks of real copies of it",
    "serve": "esxdiag serve: cycles, /metrics, the web pages, alerting and what to install beside it",
    "permissions": "the vCenter role (Read-only), host and guest logins each command needs; every API method",
    "install": "installing esxdiag; the air-gapped install from a wheelhouse (pip --no-index)",
}
CONTRIB = "contrib"


def shipped_docs() -> list[str]:
    """Every document installed with esxdiag (esxdiag.docs/*.md): each is a topic."""
    try:
        files = resources.files("esxdiag.docs").iterdir()
    except ModuleNotFoundError:
        return []
    return sorted(f.name.removesuffix(".md") for f in files if f.name.endswith(".md"))


def topics() -> dict[str, str]:
    docs = {name: ABOUT.get(name, f"docs/{name}.md") for name in shipped_docs()}
    return {**docs, CONTRIB: "where the Prometheus rules, Grafana dashboard and systemd unit are installed"}


TOPICS = topics()


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


def contrib_text() -> str:
    """Where contrib/ is installed, and what each file is for (docs/serve.md has the details)."""
    try:
        root = resources.files("esxdiag.contrib")
    except ModuleNotFoundError as exc:
        raise EsxdiagError(f"contrib/ is not installed with this esxdiag ({exc})") from None
    files = sorted(f"{folder.name}/{f.name}" for folder in root.iterdir() if folder.is_dir()
                   and not folder.name.startswith("__") for f in folder.iterdir() if f.is_file())
    return (f"contrib/ is installed with esxdiag in {root}\n"
            + "".join(f"  {root / name}\n" for name in files)
            + "Copy them from there (esxdiag help serve: \"What to install beside it\").\n")


def cmd_help(args: argparse.Namespace) -> int:
    if args.topic is None:
        for topic, about in TOPICS.items():
            print(f"esxdiag help {topic:14} {about}")
        return EXIT_OK
    sys.stdout.write(contrib_text() if args.topic == CONTRIB else doc_text(args.topic))
    return EXIT_OK
