"""The lab as a person runs it (README): `tests/lab/lab.py up` prints the env file and the exact
esxdiag command lines, each with the login of its VM's own host (esx0.lab.local 127.0.0.2 or
esx1.lab.local 127.0.0.3), those commands work, and `down` leaves no process and no directory."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

LAB = Path(__file__).resolve().parents[1] / "lab" / "lab.py"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_lab_up_commands_work_and_down_leaves_nothing(vcsim, sshd, tmp_path):
    workdir = tmp_path / "lab"
    up = subprocess.Popen([sys.executable, str(LAB), "up", "--workdir", str(workdir)], cwd=tmp_path,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not any(line.startswith("stop: ") for line in lines):
            line = up.stdout.readline()
            assert line and time.monotonic() < deadline, "".join(lines)
            lines.append(line)
        state = json.loads((workdir / "lab.json").read_text())
        env = dict(os.environ)
        for export in (workdir / "env.sh").read_text().splitlines():
            key, value = export.removeprefix("export ").split("=", 1)
            env[key] = shlex.split(value)[0]
        tried = [line.strip() for line in lines if line.startswith("  esxdiag ")]
        assert len(tried) == 5, lines
        assert "--host-ssh esxdiaglab@127.0.0.2:" in tried[0] and "--vm iperf-test1" in tried[0], tried
        assert "--host-ssh esxdiaglab@127.0.0.3:" in tried[2] and "--vm iperf-uplink-loss" in tried[2], tried
        assert ("--deep-host-ssh esx0.lab.local=esxdiaglab@127.0.0.2:" in tried[4]
                and "--deep-host-ssh esx1.lab.local=esxdiaglab@127.0.0.3:" in tried[4]), tried
        for command in (tried[0], tried[3]):  # with SSH (host + guest), and vCenter only
            argv = shlex.split(command)
            done = subprocess.run([sys.executable, "-m", "esxdiag", *argv[1:]], env=env, cwd=tmp_path,
                                  capture_output=True, text=True, timeout=90)
            assert done.returncode == 0, done.stdout + done.stderr
            assert done.stdout.startswith("iperf-test1: ")
        report = subprocess.run([sys.executable, "-m", "esxdiag", *shlex.split(tried[2])[1:]], env=env,
                                cwd=tmp_path, capture_output=True, text=True, timeout=90)  # on esx1
        assert report.returncode == 0, report.stdout + report.stderr
        assert "DROPS ELSEWHERE" in report.stdout and "esx1.lab.local vmnic1" in report.stdout, report.stdout
        scan = subprocess.run([sys.executable, "-m", "esxdiag", *shlex.split(tried[4])[1:]],
                              env={**env, "HOME": str(tmp_path)}, cwd=tmp_path, capture_output=True, text=True,
                              timeout=240)  # both hosts' logins; the deep check samples esx0's suspects
        assert scan.returncode == 0, scan.stdout + scan.stderr
        assert "uplink loss on esx1.lab.local vmnic1" in scan.stdout, scan.stdout
        down = subprocess.run([sys.executable, str(LAB), "down", "--workdir", str(workdir)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert down.returncode == 0, down.stdout + down.stderr
        up.wait(timeout=30)
        for pid in (state["pid"], state["vcsim_pid"], state["proxy_pid"], state["sshd_pid"]):
            assert not _alive(pid), pid
        assert not workdir.exists() and not Path(state["sshd_runtime"]).exists()
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(timeout=10)
        # the second lab gave the shared lab user a new password: give the session lab's back
        subprocess.run(["chpasswd"], input=f"{sshd.user}:{sshd.password}\n", text=True, check=True,
                       capture_output=True, timeout=30)
