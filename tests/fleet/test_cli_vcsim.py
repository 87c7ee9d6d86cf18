"""`esxdiag scan` end to end as a user runs it: a subprocess against two vCenters, one down."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.lab


def run(args, env, cwd, timeout=120):
    return subprocess.run([sys.executable, "-m", "esxdiag", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False)


def test_scan_two_vcenters_one_down_writes_everything_and_exits_3(fleet_lab, lab_module, tmp_path):
    down = lab_module.start_vcsim(tmp_path / "down")
    down.stop()
    env = {**os.environ, "ESXDIAG_PASSWORD": fleet_lab.password, "HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("GOVC_URL", None)
    args = ["scan", "--vcenter", fleet_lab.url, "--vcenter", down.url, "--user", fleet_lab.username, "--insecure",
            "--folder", "/DC0/vm/prod", "--save-snapshot", "snap.json", "--top", "3"]
    done = run(args + ["-o", "fleet.html"], env, tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith(f"1 of 2 vCenters not scanned: 127.0.0.1:{down.port}: unreachable")
    assert "snapshot:" in done.stderr and fleet_lab.password not in done.stdout + done.stderr
    assert "scanning: 9 of 9 VMs" in done.stderr  # progress: powered-on VMs done of total
    assert (tmp_path / "fleet.html").read_text().count("Not scanned") == 1
    snap = json.loads((tmp_path / "snap.json").read_text())
    assert len(snap["vms"]) == 10 and fleet_lab.password not in (tmp_path / "snap.json").read_text()
    assert (tmp_path / "data" / "esxdiag" / "history.sqlite").exists()  # default: the user data dir
    again = run(args + ["--format", "json", "-o", "r.json"], env, tmp_path)
    assert again.returncode == 3
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["changes"] is None  # the previous scan was partial too: never compared with
    assert report["not_scanned"][0]["error_kind"] == "unreachable"
    history = run(["history", "ring-a"], env, tmp_path)
    assert history.returncode == 0 and history.stdout.count("ring-a") == 2
    offline = run(["scan", "--snapshot", "snap.json", "--format", "csv"], env, tmp_path)
    assert offline.returncode == 3 and offline.stdout.count("\n") == 11  # header + 10 VMs; still not scanned: 3
    typo = run(["scan", "--vcenter", fleet_lab.url, "--user", fleet_lab.username, "--insecure", "--cluster", "nope",
                "--format", "text", "--no-history"], env, tmp_path)
    assert typo.returncode == 2 and "--cluster nope: matched nothing" in typo.stderr


def test_scan_two_vcenters_with_their_own_logins_from_the_config_file(fleet_lab, lab_module, tmp_path):
    """Two vCenters of different SSO domains: each [vcenter HOST:PORT] section holds that one's login."""
    second = lab_module.start_vcsim(tmp_path / "second", ("-cluster", "1", "-host", "1", "-vm", "2",
                                                          "-standalone-host", "0"))
    try:
        config = tmp_path / "esxdiag.ini"
        config.write_text("".join(f"[vcenter 127.0.0.1:{lab.port}]\nusername = {lab.username}\n"
                                  f"password = {lab.password}\ninsecure = yes\n" for lab in (fleet_lab, second)))
        config.chmod(0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))}
        env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "c"))
        done = run(["scan", "--vcenter", fleet_lab.url, "--vcenter", second.url, "--config", str(config),
                    "--no-history", "--format", "json", "-o", "r.json", "--save-snapshot", "snap.json"], env, tmp_path)
    finally:
        second.stop()
    assert done.returncode == 0, done.stderr
    snap = json.loads((tmp_path / "snap.json").read_text())
    assert [v["status"] for v in snap["vcenters"]] == ["scanned", "scanned"]
    assert len(snap["vms"]) == 16 + 2
    assert fleet_lab.password not in done.stdout + done.stderr and second.password not in done.stderr
