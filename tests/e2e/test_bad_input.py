"""Bad input: a one-line error naming the file and what was wrong, exit code 2, never a
traceback. A damaged bundle still gives a partial report that says what was not usable."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED = EXAMPLES / "seed-by-hand" / "iperf-test1"
SEED_RX = SEED / "esxi-esx0" / "vsish_rxsummary@port=33554464,portset=vSwitch0.s1.txt"


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "esxdiag", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def assert_one_line_error(proc, name):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert name in lines[0]


@pytest.mark.parametrize("kind", ["vsish-rxsummary", "esxtop", "ethtool-stats", "net-stats", "netstat",
                                  "win-advprops", "ethtool-rings", "vsphere-vm"])
@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02\xff\xfe binary \x00" * 20, b"lorem ipsum dolor\n"])
def test_parse_rejects_unusable_files(tmp_path, kind, content):
    path = tmp_path / "capture.txt"
    path.write_bytes(content)
    assert_one_line_error(run_cli("parse", kind, path), str(path))


def test_parse_wrong_kind_names_the_file(tmp_path):
    path = tmp_path / "rx.txt"
    shutil.copy(SEED_RX, path)
    assert_one_line_error(run_cli("parse", "ethtool-stats", path), str(path))
    assert_one_line_error(run_cli("parse", "esxtop", path), str(path))


def test_parse_truncated_esxtop_keeps_complete_rows(tmp_path):
    src = next((SEED / "esxi-esx0").glob("esxtop_batch*"))
    text = src.read_bytes()
    path = tmp_path / "esxtop.csv"
    path.write_bytes(text[: len(text) - 40])
    proc = run_cli("parse", "esxtop", path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["samples"] == 12 and record["warnings"]


def test_parse_missing_file(tmp_path):
    assert_one_line_error(run_cli("parse", "vsish-rxsummary", tmp_path / "nope.txt"), "nope.txt")


def test_parse_unknown_kind():
    proc = run_cli("parse", "no-such-kind", SEED_RX)
    assert proc.returncode == 2 and "unknown parser kind" in proc.stderr and "Traceback" not in proc.stderr


def test_analyze_not_a_bundle(tmp_path):
    assert_one_line_error(run_cli("analyze", tmp_path / "missing"), "missing")
    assert_one_line_error(run_cli("analyze", tmp_path), "manifest.json")
    (tmp_path / "manifest.json").write_text("{not json")
    assert_one_line_error(run_cli("analyze", tmp_path), "manifest.json")
    (tmp_path / "manifest.json").write_text(json.dumps({"format_version": 99, "targets": [], "captures": []}))
    assert_one_line_error(run_cli("analyze", tmp_path), "format_version")


def test_analyze_refuses_paths_outside_the_bundle(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(EXAMPLES / "healthy-vm", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["captures"][0]["file"] = "../../etc/passwd"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert_one_line_error(run_cli("analyze", bundle), "outside the bundle")


def test_damaged_bundle_still_reports_what_it_can(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(SEED, bundle)
    (bundle / "esxi-esx0" / "vsish_rxsummary@port=33554464,portset=vSwitch0.s0.txt").write_bytes(b"\x00garbage")
    (bundle / "guest-iperf-test1" / "netstat_s.s1.txt").unlink()
    proc = run_cli("analyze", bundle, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    statuses = {(c["spec"], c["status"]) for c in doc["coverage"]}
    assert ("vsish_rxsummary", "unparsed") in statuses
    assert ("netstat_s", "failed") in statuses
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "raise-ring1"  # guest OOB and clientStats still show the drops rising
    html = run_cli("analyze", bundle, "-o", tmp_path / "r.html")
    assert html.returncode == 0, html.stderr
    assert "report:" in html.stdout and (tmp_path / "r.html").stat().st_size > 1000


def _damaged(tmp_path, edit):
    bundle = tmp_path / "b"
    shutil.copytree(SEED, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    edit(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


@pytest.mark.parametrize("edit, words", [
    (lambda m: m.update(targets=["x"]), "targets[0]"),
    (lambda m: m["captures"][0].update(file=5), "'file'"),
    (lambda m: m["captures"][0].update(params=["a"]), "'params'"),
    (lambda m: m["captures"][0].update(sample="1"), "'sample'"),
    (lambda m: m["captures"][0].update(ended=5), "'ended'"),
    (lambda m: m.update(subject="x"), "'subject'"),
    (lambda m: m.update(subject={"vms": "iperf-test1"}), "'subject'"),
    (lambda m: m.update(window_s="60"), "'window_s'"),
    (lambda m: m["captures"][0].update(error_kind="exploded"), "'error_kind'"),
    (lambda m: m["captures"].append(dict(m["captures"][3])), "the same capture"),
])
def test_malformed_manifest_fields_are_named(tmp_path, edit, words):
    assert_one_line_error(run_cli("analyze", _damaged(tmp_path, edit)), words)


def test_samples_are_ordered_by_their_numbers_and_stamps_against_them_are_named(tmp_path):
    """docs/bundle-format.md: sample 0 is the window's start. Swapped numbers are read as given (a clock can
    step back between two samples, so stamps never reorder them), and the report says every target's stamps
    run against them and how to fix the manifest; no rate rests on a negative span."""
    def swap(manifest):
        for cap in manifest["captures"]:
            if cap["sample"] in (0, 1):
                cap["sample"] = 1 - cap["sample"]

    proc = run_cli("analyze", _damaged(tmp_path, swap), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    vm = json.loads(proc.stdout)["vms"][0]
    ring1 = vm["vnics"][0]["metrics"]["ring1_full"]
    assert ring1["reset"] is True and ring1["seconds"] == 60
    steps = [f for f in vm["findings"] if f["title"].startswith("Clock step")]
    assert steps and all("sample numbers are swapped" in f["summary"] for f in steps)


def test_config_errors_never_echo_the_line(tmp_path):
    config = tmp_path / "esxdiag.ini"
    config.write_text("[thresholds]\ncpu.costop_pct = 3\nHunter2Secret!\n")
    config.chmod(0o600)
    proc = run_cli("analyze", SEED, "--config", config)
    assert_one_line_error(proc, "line 3")
    assert "Hunter2" not in proc.stderr


@pytest.mark.parametrize("setting", ["ring.max_size=0", "cpu.ready_pct_critical=nan", "ring.drops=-1",
                                     "cpu.costop_pct=inf", "no.such=1"])
def test_thresholds_must_be_sensible(setting):
    assert_one_line_error(run_cli("analyze", SEED, "--set", setting), setting.split("=")[0])


@pytest.mark.parametrize("edit, words", [
    (lambda m: m["captures"][0].update(file="esxi-esx0/a\x00b.txt"), "'file'"),
    (lambda m: m["captures"][0].update(file=["esxi-esx0/esxi_version.txt"]), "'file'"),
    (lambda m: m["captures"][0].update(file="/etc/passwd"), "'file'"),
    (lambda m: m["captures"][0].update(spec=["esxi_version"]), "'spec'"),
    (lambda m: m["captures"][0].update(target={"id": "x"}), "'target'"),
    (lambda m: m["targets"][0].update(id=["vcenter"]), "'id'"),
    (lambda m: m["targets"][0].update(kind=["esxi"]), "'kind'"),
    (lambda m: m.update(window_s=float("nan")), "'window_s'"),
    (lambda m: m.update(window_s=float("inf")), "'window_s'"),
    (lambda m: m.update(window_s=-60), "'window_s'"),
    (lambda m: m.update(window_s=0), "'window_s'"),
])
def test_manifest_defects_name_the_field(tmp_path, edit, words):
    assert_one_line_error(run_cli("analyze", _damaged(tmp_path, edit)), words)


def _with_capture_params(spec, params):
    def edit(manifest):
        cap = next(c for c in manifest["captures"] if c["spec"] == spec)
        cap["params"] = params
    return edit


@pytest.mark.parametrize("spec, params, words", [
    ("vsish_rxqueue_status", {"portset": "vSwitch0", "port": "33554464", "q": "0"}, "'q' unknown"),
    ("vsish_rxsummary", {"portset": "vSwitch0"}, "'port' missing"),
    ("ethtool_stats", {"interface": "eth0"}, "'interface' unknown"),
])
def test_misspelt_or_missing_params_are_refused(tmp_path, spec, params, words):
    proc = run_cli("analyze", _damaged(tmp_path, _with_capture_params(spec, params)))
    assert_one_line_error(proc, words)
    assert "captures[" in proc.stderr


def test_deeply_nested_or_huge_number_manifest_is_bad_input(tmp_path):
    (tmp_path / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    assert_one_line_error(run_cli("analyze", tmp_path), "manifest.json")
    (tmp_path / "manifest.json").write_text('{"format_version": 1, "window_s": ' + "9" * 5000 + "}")
    assert_one_line_error(run_cli("analyze", tmp_path), "manifest.json")


def test_manifest_must_be_a_regular_file_inside_the_bundle(tmp_path):
    outside = tmp_path / "elsewhere.json"
    shutil.copy(SEED / "manifest.json", outside)
    bundle = tmp_path / "b"
    shutil.copytree(SEED, bundle)
    (bundle / "manifest.json").unlink()
    (bundle / "manifest.json").symlink_to(outside)
    assert_one_line_error(run_cli("analyze", bundle), "symlink out of the bundle")
    (bundle / "manifest.json").unlink()
    (bundle / "manifest.json").mkdir()
    assert_one_line_error(run_cli("analyze", bundle), "not a regular file")


def test_capture_symlinked_out_of_the_bundle_is_refused(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(SEED, bundle)
    target = bundle / "esxi-esx0" / "esxi_version.txt"
    target.unlink()
    (tmp_path / "secret.txt").write_text("VMware ESXi 6.0.0 build-5224934\n")
    target.symlink_to(tmp_path / "secret.txt")
    assert_one_line_error(run_cli("analyze", bundle), "outside the bundle")
