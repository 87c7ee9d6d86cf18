"""The design card's layout: one esxdiag import namespace, and analysis that never needs the
network libraries."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL_IMPORT = re.compile(r"^\s*(from|import)\s+(collectors|reports|templates)\b", re.M)


def test_no_module_imports_the_folders_as_top_level_packages():
    offenders = [str(p.relative_to(ROOT)) for folder in ("esxdiag", "collectors", "reports", "templates", "tests",
                                                         "bench")
                 for p in (ROOT / folder).rglob("*.py") if TOP_LEVEL_IMPORT.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_installed_namespace_maps_the_folders():
    import esxdiag.collectors
    import esxdiag.reports
    import esxdiag.templates

    assert Path(esxdiag.collectors.__file__).parent == ROOT / "collectors"
    assert Path(esxdiag.reports.__file__).parent == ROOT / "reports"
    assert Path(esxdiag.templates.__file__).parent == ROOT / "templates"


def test_analyze_does_not_import_pyvmomi_or_paramiko(tmp_path):
    code = (
        "import sys\n"
        "from esxdiag.cli import main\n"
        f"rc = main(['analyze', {str(ROOT / 'examples' / 'iperf-test1-ring-exhaustion')!r}, '--format', 'json',"
        f" '-o', {str(tmp_path / 'r.json')!r}])\n"
        "assert rc == 0, rc\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyVmomi', 'paramiko'))\n"
        "print(loaded)\n"
        "assert not loaded, loaded\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
