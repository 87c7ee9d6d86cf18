"""Issue 25 point 17: the air-gapped install. The end-to-end check needs the package index, so it is
not a test here: CI runs scripts/check-airgapped (wheelhouse built, fresh venv, pip --no-index, the
quick start). These check, offline, that CI runs it, that the README leads to it, and the
wheelhouse script's refusals."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = ROOT / "scripts" / "wheelhouse"


def test_ci_runs_the_airgapped_check_and_the_readme_links_its_doc():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "scripts/check-airgapped" in ci
    assert os.access(ROOT / "scripts" / "check-airgapped", os.X_OK) and os.access(WHEELHOUSE, os.X_OK)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme[readme.index("## Quick start"):readme.index("## What it answers")]
    assert "[docs/install.md](docs/install.md)" in quick_start and "--no-index" in quick_start
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "## Air-gapped install" in install
    assert "pip install --no-index --find-links wheelhouse esxdiag" in install


def _wheelhouse(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(WHEELHOUSE), *args], capture_output=True, text=True, timeout=60)


def test_the_wheelhouse_script_refuses_a_used_folder_and_half_a_target(tmp_path):
    (tmp_path / "old.whl").write_text("")
    used = _wheelhouse("--out", str(tmp_path))
    assert used.returncode == 2 and "is not empty" in used.stderr
    half = _wheelhouse("--out", str(tmp_path / "new"), "--platform", "win_amd64")
    assert half.returncode == 2 and "--platform and --python-version go together" in half.stderr
    assert not (tmp_path / "new").exists() or not any((tmp_path / "new").iterdir())
    unknown = _wheelhouse("--outdir", "x")
    assert unknown.returncode == 2 and "unknown argument --outdir" in unknown.stderr
