"""Issue 25 point 10: every shipped doc is an `esxdiag help` topic, and contrib/ ships with the
package: `esxdiag help contrib` says where a pip install put it. The package is built as pip
builds it (setuptools build_py from setup.cfg) and esxdiag is run from that build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    lib = tmp_path_factory.mktemp("build") / "lib"
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib",
                    str(lib)], cwd=ROOT, check=True, capture_output=True, timeout=300)
    return lib


def _help(built: Path, *topic: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(built)}
    return subprocess.run([sys.executable, "-m", "esxdiag", "help", *topic], cwd=built.parent, env=env,
                          capture_output=True, text=True, timeout=60)


def test_every_shipped_doc_is_a_help_topic(built):
    shipped = sorted(p.stem for p in (built / "esxdiag" / "docs").glob("*.md"))
    assert shipped == sorted(p.stem for p in (ROOT / "docs").glob("*.md"))  # every doc of docs/ ships
    listed = _help(built).stdout
    for topic in shipped:
        assert f"esxdiag help {topic} " in listed, listed
        done = _help(built, topic)
        assert done.returncode == 0, done.stderr
        assert done.stdout == (ROOT / "docs" / f"{topic}.md").read_text(encoding="utf-8")


def test_help_contrib_says_where_the_installed_contrib_files_are(built):
    done = _help(built, "contrib")
    assert done.returncode == 0, done.stderr
    installed = built / "esxdiag" / "contrib"
    assert f"installed with esxdiag in {installed}" in done.stdout, done.stdout
    for source in sorted((ROOT / "contrib").rglob("*")):
        if source.is_file() and source.suffix != ".py":
            copy = installed / source.relative_to(ROOT / "contrib")
            assert str(copy) in done.stdout and copy.read_bytes() == source.read_bytes(), copy
