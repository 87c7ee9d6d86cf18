"""Issue 25 point 14: a mistyped VM name stops the run at the lookup and leaves no empty bundle
folder behind (the default folder is created for the run and removed when nothing was read)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from esxdiag.errors import EXIT_COLLECTION

pytestmark = pytest.mark.lab


def test_a_mistyped_vm_name_leaves_no_bundle_folder(esxdiag, tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run([sys.executable, "-m", "esxdiag", "rings", "--vm", "iperf-tset1", "--no-host-ssh",
                           "--no-guest"], cwd=cwd, env=esxdiag.env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_COLLECTION, done.stderr
    assert "close names: iperf-test1" in done.stderr and "no bundle kept" in done.stderr, done.stderr
    assert list(cwd.iterdir()) == [], list(cwd.iterdir())
    assert "bundle:" not in done.stdout
