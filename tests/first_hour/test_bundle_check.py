"""Issue 25 point 11: `esxdiag bundle check` lists every manifest defect at once, as the README
promises, not the first one and then the next after each fix."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "iperf-test1-ring-exhaustion"


def test_bundle_check_lists_every_manifest_defect_at_once(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["window_s"] = -5
    manifest["notes"] = "not a list"
    manifest["targets"][0]["kind"] = "mainframe"
    manifest["captures"][0]["sample"] = "first"
    manifest["captures"][1]["error_kind"] = "gremlins"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    done = subprocess.run([sys.executable, "-m", "esxdiag", "bundle", "check", str(bundle)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    defects = [line for line in done.stdout.splitlines() if line.startswith("defect: ")]
    for field in ("'window_s'", "'notes'", "targets[0]: 'kind'", "captures[0]: 'sample'", "captures[1]: 'error_kind'"):
        assert sum(field in line for line in defects) == 1, (field, done.stdout)
    assert len(defects) == 5, done.stdout
    analyze = subprocess.run([sys.executable, "-m", "esxdiag", "analyze", str(bundle), "--format", "json"],
                             capture_output=True, text=True, timeout=120)
    assert analyze.returncode == 2 and "'window_s'" in analyze.stderr and "and 4 more defects" in analyze.stderr
