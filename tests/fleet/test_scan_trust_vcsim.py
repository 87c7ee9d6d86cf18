"""Issue 15's reproducers against vcsim, as a user runs them (subprocesses): a scan of an unreachable
vCenter, one with a TLS failure and one with a wrong password never read as a healthy fleet, never
replace the last good report and are never compared with; a --vm filter matching nothing is exit 2;
scans and per-VM runs started together get their own folders; snapshots stay in the scan's folder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab
CALM = "No VM needs attention"


def _env(tmp_path: Path, password: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))}
    env.update(ESXDIAG_PASSWORD=password, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    return env


def _run(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "esxdiag", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _report(done: subprocess.CompletedProcess) -> Path:
    return Path(next(line for line in done.stdout.splitlines() if line.startswith("report: ")).removeprefix("report: "))


def test_failed_scans_say_so_first_never_replace_the_report_and_are_never_compared_with(fleet_lab, tmp_path):
    lab, port = fleet_lab, _closed_port()
    base = ["scan", "--user", lab.username, "--folder", "/DC0/vm/prod", "--top", "2"]
    good = _run(base + ["--vcenter", lab.url, "--insecure"], _env(tmp_path, lab.password), tmp_path)
    assert good.returncode == 0, good.stderr
    good_report = _report(good)
    kept = good_report.read_bytes()
    assert good_report.parent.parent == tmp_path and (good_report.parent / "snapshot.json").is_file()
    failures = {
        "unreachable": (base + ["--vcenter", f"https://127.0.0.1:{port}/sdk", "--insecure"], lab.password,
                        f"127.0.0.1:{port}: unreachable"),
        "tls": (base + ["--vcenter", lab.url], lab.password, f"127.0.0.1:{lab.port}: TLS certificate not trusted"),
        "auth": (base + ["--vcenter", lab.url, "--insecure"], "wrong-password", f"127.0.0.1:{lab.port}: login failed"),
    }
    for kind, (args, password, why) in failures.items():
        done = _run(args, _env(tmp_path, password), tmp_path)
        assert done.returncode == 3, (kind, done.stderr)
        assert done.stdout.startswith(f"1 of 1 vCenters not scanned: {why}"), (kind, done.stdout)
        assert CALM not in done.stdout and "0 VMs scanned" in done.stdout
        html = _report(done).read_text()
        assert CALM not in html and f"<strong>1 of 1 vCenters not scanned: {why}" in html
        assert _report(done).parent != good_report.parent and good_report.read_bytes() == kept, kind
    again = _run(base + ["--vcenter", lab.url, "--insecure", "--format", "json", "-o", "r.json"],
                 _env(tmp_path, lab.password), tmp_path)
    assert again.returncode == 0, again.stderr
    first = json.loads((good_report.parent / "snapshot.json").read_text())["collected_at"]
    assert json.loads((tmp_path / "r.json").read_text())["changes"]["previous_at"] == first
    nomatch = _run(["scan", "--vcenter", lab.url, "--user", lab.username, "--insecure", "--vm", "nomatch*",
                    "--no-history"], _env(tmp_path, lab.password), tmp_path)
    assert nomatch.returncode == 2 and "--vm 'nomatch*': matched no VM in the scanned vCenter(s)" in nomatch.stderr
    assert CALM not in nomatch.stdout
    assert not list(tmp_path.glob("*.html"))  # every report in its scan's folder
    beside = sorted(p.name for p in tmp_path.glob("*.json"))  # -o r.json: its snapshot beside it, uniquely named
    assert len(beside) == 2 and beside[0].startswith("esxdiag-scan-") and beside[1] == "r.json"


def _taken(cwd: Path, stem: str, seconds: int = 180) -> None:
    """Pre-create STEM-TIME for every second of the next `seconds`: runs must take -2, -3 ..."""
    now = datetime.now(timezone.utc)
    for s in range(-2, seconds):
        (cwd / f"{stem}-{now + timedelta(seconds=s):%Y%m%dT%H%M%SZ}").mkdir(exist_ok=True)


def _suffix(folder: Path) -> int:
    """3 for esxdiag-...-20261125T102650Z-3; 1 for the plain name."""
    last = folder.name.rsplit("-", 1)[1]
    return int(last) if last.isdigit() and not last.endswith("Z") else 1


def _together(argvs: list[list[str]], env: dict, cwd: Path) -> list[tuple[int, str, str]]:
    started = [subprocess.Popen([sys.executable, "-m", "esxdiag", *a], env=env, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for a in argvs]
    return [(p.wait(timeout=180), *p.communicate()) for p in started]


def test_scans_started_together_get_their_own_folders_and_quiet_is_one_line(fleet_lab, tmp_path):
    lab = fleet_lab
    _taken(tmp_path, "esxdiag-scan")  # the plain name of this second is taken: both must find another
    argv = ["scan", "--vcenter", lab.url, "--user", lab.username, "--insecure", "--folder", "/DC0/vm/prod",
            "--quiet", "--no-history"]
    done = _together([argv, argv], _env(tmp_path, lab.password), tmp_path)
    assert [code for code, _, _ in done] == [0, 0], done
    assert all(err == "" and out.count("\n") == 1 and out.startswith("report: ") for _, out, err in done), done
    folders = {Path(out.strip().removeprefix("report: ")).parent for _, out, _ in done}
    assert len(folders) == 2 and all(_suffix(f) >= 2 for f in folders)  # the plain names were taken
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == ["fleet-report.html", "snapshot.json"]
        assert len(json.loads((folder / "snapshot.json").read_text())["vms"]) == 10
    assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob("*.html"))  # nothing in the current directory


def test_per_vm_runs_started_together_get_their_own_bundle_folders(fleet_lab, tmp_path):
    lab = fleet_lab
    _taken(tmp_path, "esxdiag-ring-a")
    argv = ["rings", "--vm", "ring-a", "--vcenter", lab.url, "--user", lab.username, "--insecure", "--no-host-ssh",
            "--no-guest", "--window", "60"]
    done = _together([argv, argv, ["collect", *argv[1:]]], _env(tmp_path, lab.password), tmp_path)
    bundles = [Path(next(line for line in out.splitlines() if line.startswith("bundle: ")).removeprefix("bundle: "))
               for _, out, _ in done]
    assert len(set(bundles)) == 3, done
    # the plain name of each second was taken; runs that met in one second took -2, -3 ... (which
    # exact suffix depends on whether the busy machine started them in the same second)
    assert all(_suffix(b) >= 2 for b in bundles), bundles
    for bundle in bundles:
        manifest = json.loads((bundle / "manifest.json").read_text())
        assert manifest["subject"]["vms"] == ["ring-a"]
