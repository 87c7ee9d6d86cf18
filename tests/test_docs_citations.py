"""Issue 31: every document that code, tests and docs point to is part of the repository.

No tracked file cites the notes kept outside it (the formats, design and domain notes, the shared
seeds and samples), every document of docs/ named anywhere exists, and a section named with it
(``docs/raw-formats.md §3.5``, ``docs/diagnosis.md section 8``) is a heading of that document. A
bare ``§N`` inside a document names its own section."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# written so that this file does not match itself
OUTSIDE = re.compile(r"(?<![\w-])(formats|design|domain)\.md|\.\./shared\b|/work/share[d]\b|shared/(seeds|samples)")
SECTION = r"(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?"
NAMED_DOC = re.compile(r"docs/([\w-]+)\.md\b")
NAMED_SECTION = re.compile(r"docs/([\w-]+)\.md\)?,?\s+(?:§\s?|sections?\s+)" + SECTION)
LINKED_SECTION = re.compile(r"\]\(([\w-]+)\.md\),?\s+§\s?" + SECTION)
LINKED_DOC = re.compile(r"\]\(([\w-]+\.md)\)")
BARE_SECTION = re.compile(r"§\s?" + SECTION)
# a path in the repository named in text: a folder of it, then a name (globs and placeholders allowed)
REPO_PATH = re.compile(r"(?<![\w/.-])((?:esxdiag|collectors|reports|templates|tests|bench|scripts|contrib|examples|docs)"
                       r"/[\w./{}*<>-]*[\w*}>])")
INSTALLED = re.compile(r"^esxdiag/(?=(collectors|reports|templates|contrib|docs)(/|$))")  # esxdiag.collectors is collectors/
PATHS_NOT_IN_THE_TREE = {
    "examples/no-such-bundle": "the README's example of a wrong path",
    "tests/test_typecheck.py": "names the files of the throwaway tree it type-checks",
    "tests/test_docs_citations.py": "this file's own examples",
}
# generated from their manifest.json (scanned here) and compared by tests/e2e/test_examples.py
GENERATED = re.compile(r"^examples/.*/report\.(json|html)$")


def tracked_texts() -> dict[str, str]:
    """Every tracked text file but captured data: tests/fixtures keeps only its .py and .md files."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    texts = {}
    for name in names.decode().split("\0"):
        path = ROOT / name
        if not name or GENERATED.match(name) or not path.is_file():
            continue
        if name.startswith("tests/fixtures/") and path.suffix not in (".py", ".md"):
            continue
        data = path.read_bytes()
        if b"\0" not in data:
            texts[name] = data.decode("utf-8", errors="replace")
    return texts


TEXTS = tracked_texts()


def headings(doc: str) -> list[str]:
    return [line for line in (DOCS / f"{doc}.md").read_text(encoding="utf-8").splitlines() if line.startswith("#")]


def has_section(doc: str, number: str) -> bool:
    heading = re.compile(r"^#+ " + re.escape(number) + r"\.?\s")
    return any(heading.match(line) for line in headings(doc))


def cited_sections(name: str, text: str) -> list[tuple[str, str]]:
    """(document, section number) for each section the text names, ranges by both ends."""
    found, claimed = [], set()
    patterns = [NAMED_SECTION] + ([LINKED_SECTION] if name.startswith("docs/") else [])
    for pattern in patterns:
        for m in pattern.finditer(text):
            found += [(m.group(1), n) for n in m.group(2, 3) if n]
            claimed.add(m.start(2))
    if name.startswith("docs/") and name.endswith(".md"):
        own = Path(name).stem
        for m in BARE_SECTION.finditer(text):
            if m.start(1) not in claimed:
                found += [(own, n) for n in m.group(1, 2) if n]
    return found


def test_the_scan_sees_code_tests_docs_and_fixture_notes():
    for name in ("README.md", "esxdiag/parsers/esxcli.py", "docs/raw-formats.md", "tests/fixtures/host/README.md"):
        assert name in TEXTS, name
    assert OUTSIDE.search("see formats" + ".md 3.5") and OUTSIDE.search("../" + "shared/x")
    assert not OUTSIDE.search("docs/raw-formats.md §3.5")


def test_no_tracked_file_cites_notes_outside_the_repository():
    cites = [f"{name}:{n}: {line.strip()[:120]}" for name, text in TEXTS.items()
             for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]
    assert cites == [], "cite the project's own docs/ instead:\n" + "\n".join(cites)


def test_every_named_doc_exists():
    missing = sorted({f"{name}: docs/{doc}.md" for name, text in TEXTS.items() for doc in NAMED_DOC.findall(text)
                      if not (DOCS / f"{doc}.md").is_file()})
    missing += sorted(f"{name}: {link}" for name, text in TEXTS.items() if name.startswith("docs/")
                      for link in LINKED_DOC.findall(text) if not (DOCS / link).is_file())
    assert missing == []


def test_every_named_section_is_a_heading_of_its_doc():
    cited = [section for name, text in TEXTS.items() for section in cited_sections(name, text)]
    assert len(cited) > 50  # the parsers and their tests cite docs/raw-formats.md by section
    wrong = sorted({f"{name}: docs/{doc}.md §{number}" for name, text in TEXTS.items()
                    for doc, number in cited_sections(name, text)
                    if (DOCS / f"{doc}.md").is_file() and not has_section(doc, number)})
    assert wrong == []


@pytest.mark.parametrize("text, expected", [
    ("(docs/raw-formats.md §3.3-3.5)", [("raw-formats", "3.3"), ("raw-formats", "3.5")]),
    ("(docs/diagnosis.md\nsection 9, more)", [("diagnosis", "9")]),
    ("docs/raw-formats.md §7 item 5", [("raw-formats", "7")]),
])
def test_cited_sections_reads_the_forms_in_use(text, expected):
    assert cited_sections("esxdiag/x.py", text) == expected


def test_a_missing_section_is_caught():
    assert has_section("raw-formats", "3.5") and has_section("raw-formats", "1")
    assert not has_section("raw-formats", "3.9") and not has_section("diagnosis", "99")


def path_exists(named: str) -> bool:
    """A named path exists: as it is, as module.attribute of a .py file, or as a glob with
    placeholders (``{name}``, ``<port>``) read as ``*``; an installed name by its repository folder."""
    named = INSTALLED.sub("", re.sub(r"\*\*$", "", named).rstrip("."))  # a final ** is Markdown bold
    if any(c in named for c in "*{<"):
        return bool(list(ROOT.glob(re.sub(r"\{[^}]*\}|<[^>]*>", "*", named))))
    module = re.sub(r"\.\w+$", ".py", named)
    return (ROOT / named).exists() or (ROOT / module).is_file()


def ignored(paths: list[str]) -> set[str]:
    """The paths git ignores, as files or as folders."""
    asked = [form for path in paths for form in (path, path + "/")]
    done = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(asked),
                          capture_output=True, text=True)
    return {path.rstrip("/") for path in done.stdout.split()}


def test_every_repository_path_named_in_code_tests_and_docs_exists():
    """Fixture READMEs are left out: they also name files of the public repositories captures came from."""
    named = {(name, m.group(1).rstrip(".")) for name, text in TEXTS.items()
             if not name.startswith("tests/fixtures/") and name not in PATHS_NOT_IN_THE_TREE
             for m in REPO_PATH.finditer(text)}
    named = {(name, re.sub(r"\*\*$", "", path).rstrip(".")) for name, path in named}
    assert len(named) > 500
    missing = {(name, path) for name, path in named if not path_exists(path) and path not in PATHS_NOT_IN_THE_TREE}
    generated = ignored(sorted({path for _, path in missing}))  # bench/out/...: written by the benchmarks
    assert sorted(f"{name}: {path}" for name, path in missing if path not in generated) == []


def test_path_exists_reads_the_forms_in_use():
    assert path_exists("collectors/captures.record_failure") and path_exists("esxdiag/collectors")
    assert path_exists("tests/fixtures/host/esxcli_vm_list_*.txt") and path_exists("docs/{name}.md")
    assert not path_exists("tests/fleet/test_actionable.py") and not path_exists("docs/no-such-doc." + "md")
