"""README "Using esxdiag from Python": every ```python block runs, in order, in one namespace, from
the repository root, so the documented API cannot drift from the code."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Using esxdiag from Python"


def python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return re.findall(r"^```python\n(.*?)^```$", text[start:end if end != -1 else None], re.S | re.M)


def test_the_section_has_examples():
    assert len(python_blocks()) >= 4


def test_every_python_example_in_the_readme_runs(monkeypatch):
    pytest.importorskip("pandas")
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "readme"}
    printed = io.StringIO()
    for number, block in enumerate(python_blocks(), 1):
        with contextlib.redirect_stdout(printed):
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
    out = printed.getvalue()
    assert "iperf-test1 00:50:56:a6:55:f4 raise-ring1" in out
    assert "examples/no-such-bundle: no such file or folder" in out
    assert not (ROOT / "history.sqlite").exists() and os.getcwd() == str(ROOT)


@pytest.mark.parametrize("number", range(1, len(python_blocks()) + 1))
def test_each_python_example_runs_alone_in_a_fresh_interpreter(number):
    """Copied alone (issue 25 point 9): no block leans on a name an earlier block defined."""
    pytest.importorskip("pandas")
    block = python_blocks()[number - 1]
    done = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"README.md python block {number}:\n{block}\n{done.stderr}"
