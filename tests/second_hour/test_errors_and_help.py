"""Issue 32, "Errors and help": a path that is not a bundle says what it is, and typos of a command or an
option get the command's own usage and the closest names."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def esxdiag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "esxdiag", *args], capture_output=True, text=True, timeout=120)


def test_a_path_with_a_typo_is_no_such_file_with_the_closest_name(tmp_path):
    shutil.copytree(EXAMPLES / "healthy-vm", tmp_path / "healthy-vm")
    done = esxdiag("analyze", str(tmp_path / "healthy-wm"))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"esxdiag: {tmp_path / 'healthy-wm'}: no such file or folder (did you mean "
                                   f"{tmp_path / 'healthy-vm'}?)")


def test_a_manifest_asks_for_the_folder_that_holds_it():
    done = esxdiag("analyze", str(EXAMPLES / "healthy-vm" / "manifest.json"))
    assert done.returncode == 2
    assert "is a bundle's manifest: pass the folder that holds it" in done.stderr
    assert f"esxdiag analyze {EXAMPLES / 'healthy-vm'}" in done.stderr
    assert "not a directory" not in done.stderr


def test_a_folder_of_bundles_lists_them_instead_of_rename_advice():
    done = esxdiag("analyze", str(EXAMPLES))
    assert done.returncode == 2
    bundles = sorted(p.parent for p in EXAMPLES.glob("**/manifest.json"))
    lines = done.stderr.splitlines()
    assert lines[0] == f"esxdiag: {EXAMPLES} holds {len(bundles)} bundles, not one: analyze one of them:"
    assert lines[1:] == [f"  esxdiag analyze {b}" for b in bundles]
    assert "rename" not in done.stderr


def test_one_capture_file_points_to_parse(tmp_path):
    capture = tmp_path / "rxsummary.txt"
    capture.write_text("stats of a vmxnet3 vNIC rx queue {\n   running out of buffers:2\n}\n")
    done = esxdiag("analyze", str(capture))
    assert done.returncode == 2 and "one file, not a bundle" in done.stderr and "esxdiag parse KIND FILE" in done.stderr


@pytest.mark.parametrize("argv, usage, hint", [
    (["analyse", "x"], "usage: esxdiag [-h]", "(did you mean analyze?)"),
    (["analyze", "--fromat", "json", "x"], "usage: esxdiag analyze", "(did you mean --format?)"),
    (["rings", "--vm", "web01", "--windw", "60"], "usage: esxdiag rings", "(did you mean --window?)"),
    (["scan", "--dpe", "3"], "usage: esxdiag scan", "(did you mean --deep?)"),
    (["bundle", "chek", "x"], "usage: esxdiag bundle", "(did you mean check?)"),
    (["bundle", "init", "x", "--widow=60"], "usage: esxdiag bundle init", "(did you mean --window?)"),
])
def test_typos_get_the_commands_usage_and_a_suggestion(argv, usage, hint):
    done = esxdiag(*argv)
    assert done.returncode == 2
    assert done.stderr.startswith(usage), done.stderr
    assert done.stderr.rstrip().endswith(hint), done.stderr


def test_bundle_check_lists_capture_defects_beside_the_manifests_field_defects(tmp_path):
    import json

    bundle = tmp_path / "b"
    shutil.copytree(EXAMPLES / "healthy-vm", bundle, ignore=shutil.ignore_patterns("report.*"))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["captures"][0]["sample"] = "first"  # a field defect: the manifest does not load
    manifest["captures"][1]["file"] = "nothere.txt"  # a missing file
    garbage = bundle / manifest["captures"][2]["file"]
    garbage.write_bytes(b"\x00\x01garbage")  # a capture its parser refuses
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    done = esxdiag("bundle", "check", str(bundle))
    assert done.returncode == 2
    defects = [line for line in done.stdout.splitlines() if line.startswith("defect: ")]
    assert len(defects) == 3, done.stdout
    assert "'sample' must be an integer" in defects[0]
    assert "nothere.txt is listed but missing" in defects[1]
    assert manifest["captures"][2]["file"] in defects[2] and "not readable" in defects[2]


def test_deep_check_progress_names_the_vm_by_name_with_its_moid_in_brackets():
    from esxdiag.collectors.sampler import SampledVm

    assert SampledVm("vm-46", "win2012r2-file01").words() == "'win2012r2-file01' (vm-46)"
    assert SampledVm("web01", "web01").words() == "'web01'"
