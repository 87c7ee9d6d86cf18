"""Issue 25 point 12: the lab's tools have an install step of their own (scripts/lab-install), named
in the README's lab section before `lab.py up`; scripts/test uses it rather than its own copy."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lab-install"


def test_the_readme_lab_section_runs_the_lab_install_step_first():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lab = readme[readme.index("### Try it without a vSphere: the lab"):]
    first_block = lab[lab.index("```\n") + 4:]
    assert first_block.splitlines()[0] == "scripts/lab-install", first_block[:200]
    assert "scripts/lab-install" in (ROOT / "scripts" / "test").read_text()


@pytest.mark.lab
@pytest.mark.skipif(shutil.which("go") is None or not Path("/usr/sbin/sshd").exists(),
                    reason="the step would install the lab's tools here (needs go and openssh-server present)")
def test_the_lab_install_step_installs_the_lab_alone_and_runs_no_tests():
    started = time.monotonic()
    done = subprocess.run([str(SCRIPT)], cwd="/", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "the lab's tools are installed" in done.stderr and "vcsim" in done.stderr and "govc" in done.stderr
    assert "passed" not in done.stdout + done.stderr and time.monotonic() - started < 120
