"""Each parser kind is declared once, next to its function (@parser in esxdiag.parsers.registry):
its description, content sniffer and sample input. Every declaration is complete, its sample
parses and is recognised as its kind, every spec names a declared kind, docs/parsers.md is
current, and a new kind declared in a module of its own reaches parse_text, the sniffers and
``esxdiag parse --list`` with nothing else to edit."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import esxdiag.parsers
from esxdiag.intake.sniff import SNIFFERS, sniff_file, sniff_text
from esxdiag.parsers import MODULES, PARSERS, parse_file, parse_text, to_jsonable
from esxdiag.parsers.registry import declared_in
from esxdiag.specs import SPECS

ROOT = Path(__file__).resolve().parents[2]
KINDS = sorted(PARSERS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_declares_a_description_a_sniffer_and_a_sample(kind):
    entry = PARSERS[kind]
    assert entry.kind == kind and entry.about.strip() and "\n" not in entry.about
    assert callable(entry.sniff) and entry.sample.strip()
    assert callable(entry.load())


@pytest.mark.parametrize("kind", KINDS)
def test_every_sample_parses(kind):
    to_jsonable(parse_text(kind, PARSERS[kind].sample))  # a ParseError or NoData fails the test


@pytest.mark.parametrize("kind", KINDS)
def test_every_sample_is_recognised_as_its_own_kind_only(kind):
    assert sniff_text(PARSERS[kind].sample).kinds == (kind,)


def test_every_spec_names_a_declared_kind():
    assert {name: spec.parser for name, spec in SPECS.items() if spec.parser not in PARSERS} == {}


def test_every_module_that_declares_a_kind_is_listed():
    declaring = {info.name for info in pkgutil.iter_modules(esxdiag.parsers.__path__)
                 if declared_in(importlib.import_module(f"esxdiag.parsers.{info.name}"))}
    assert declaring == set(MODULES)


def test_reading_the_declarations_imports_no_dataframe_library():
    code = ("import sys, esxdiag.parsers; esxdiag.parsers.PARSERS; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'pandas')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_docs_parser_table_is_current():
    spec = importlib.util.spec_from_file_location("parsers_doc", ROOT / "scripts" / "parsers_doc.py")
    doc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc)
    assert (ROOT / "docs" / "parsers.md").read_text(encoding="utf-8") == doc.render(), \
        "docs/parsers.md is stale: python scripts/parsers_doc.py > docs/parsers.md"


SCRATCH = '''
from dataclasses import dataclass

from esxdiag.errors import NoData
from esxdiag.parsers.registry import first_line, parser


@dataclass(frozen=True)
class Uptime:
    seconds: int


@parser("scratch-uptime", about="cat /proc/uptime, prefixed: seconds since boot",
        sniff=first_line(r"^uptime: [0-9]+\\.[0-9]+ [0-9]+\\.[0-9]+$"), sample="uptime: 3617.25 7020.71\\n")
def parse_uptime(text):
    if not text.strip():
        raise NoData("empty")
    return Uptime(int(float(text.split()[1])))
'''


@pytest.fixture
def scratch_kind(tmp_path, monkeypatch):
    """A kind declared in a module outside the package, added to the registry for this test only."""
    path = tmp_path / "esxdiag_scratch_parser.py"
    path.write_text(SCRATCH, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("esxdiag_scratch_parser", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    spec.loader.exec_module(module)
    (entry,) = declared_in(module)
    monkeypatch.setitem(PARSERS, entry.kind, entry)
    return entry


def test_a_new_kind_needs_only_its_declaration(scratch_kind, tmp_path, capsys, monkeypatch):
    from esxdiag.cli import main

    assert parse_text("scratch-uptime", scratch_kind.sample).seconds == 3617
    assert sniff_text(scratch_kind.sample).kinds == ("scratch-uptime",) and "scratch-uptime" in SNIFFERS
    capture = tmp_path / "up.txt"
    capture.write_text("uptime: 86400.00 170000.10\n")
    assert sniff_file(capture).kind == "scratch-uptime" and parse_file("scratch-uptime", capture).seconds == 86400
    with pytest.raises(SystemExit):
        main(["parse", "--list"])
    listed = capsys.readouterr().out.splitlines()
    assert f"{'scratch-uptime':24} cat /proc/uptime, prefixed: seconds since boot" in listed
    assert len(listed) == len(KINDS) + 1
    assert main(["parse", "scratch-uptime", str(capture)]) == 0
    assert '"seconds": 86400' in capsys.readouterr().out

    monkeypatch.undo()  # gone again: nothing leaks into other tests
    assert "scratch-uptime" not in PARSERS and "esxdiag_scratch_parser" not in sys.modules
    assert sniff_text(scratch_kind.sample).kinds == ()
