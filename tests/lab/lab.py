"""The whole test lab by hand: the lab's vCenter plus the lab sshd (the ESXi hosts and the guests).

    python tests/lab/lab.py up [--workdir .lab]     # starts both, prints env.sh and commands, runs until stopped
    python tests/lab/lab.py down [--workdir .lab]   # stops both; no process and no lab directory is left

`up` writes WORKDIR/env.sh (source it: the vCenter URL, user, password and thumbprint for esxdiag)
and WORKDIR/lab.json (the pids `down` stops). The vCenter is vcsim behind the lab's perf proxy
(vcsim_lab.py): its performance counters for the scenario VMs and hosts come from the same model,
with the same time origin, as what the emulated hosts print, so esxdiag with and without SSH reads
the same drops, uplink losses and CPU figures. Two ESXi hosts: esx0.lab.local (127.0.0.2) runs every
VM but iperf-uplink-loss, which runs alone on esx1.lab.local (127.0.0.3), whose vmnic1 loses frames.
Ctrl-C, SIGTERM or `down` stop the proxy, vcsim and sshd and remove WORKDIR and the sshd runtime
directory. The lab needs root (sshd, a lab user esxdiaglab), vcsim/govc
(go install github.com/vmware/govmomi/vcsim@v0.46.3, .../govc@...) and OpenSSH server.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_WORKDIR = Path.cwd() / ".lab"
STOP_TIMEOUT_S = 20.0


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"esxdiag_lab_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def commands(vcsim, sshd, workdir: Path) -> list[str]:
    """The exact command lines to try esxdiag against this lab (after `. WORKDIR/env.sh`): each VM's
    --host-ssh is the address of the host it runs on."""
    keys = f"--known-hosts {shlex.quote(str(sshd.known_hosts))} --ssh-key {shlex.quote(str(sshd.key_file))}"

    def ssh(vm: str) -> str:
        return f"--host-ssh {sshd.user}@{sshd.host_address_of(vm)}:{sshd.port} --guest-ssh {sshd.user}@:{sshd.port} {keys}"

    deep_hosts = " ".join(f"--deep-host-ssh {name}={sshd.user}@{address}:{sshd.port}"
                          for name, address in sshd.host_addresses.items())
    return [
        f". {shlex.quote(str(workdir / 'env.sh'))}",
        f"esxdiag rings --vm iperf-test1 {ssh('iperf-test1')} --window 10 --esxtop-delay 2",
        f"esxdiag report --vm iperf-cpu-limited {ssh('iperf-cpu-limited')} --window 10 --esxtop-delay 2",
        f"esxdiag report --vm iperf-uplink-loss {ssh('iperf-uplink-loss')} --window 10 --esxtop-delay 2",
        "esxdiag rings --vm iperf-test1 --no-host-ssh --no-guest",
        f"esxdiag scan --deep 5 {deep_hosts} {keys} --deep-window 10 --esxtop-delay 2 --no-history",
    ]


def up(workdir: Path) -> int:
    workdir = workdir.resolve()
    if (workdir / "lab.json").exists():
        print(f"a lab is already recorded in {workdir / 'lab.json'}: run `down` first", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, _exit_on_signal)
    vcsim_lab, ssh_lab = _load("vcsim_lab"), _load("ssh_lab")
    vcsim = sshd = None
    try:
        sshd = ssh_lab.start_ssh_lab(workdir / "ssh")
        vcsim = vcsim_lab.start_lab(workdir / "vcsim", started=sshd.started)  # one time origin for both
        env = {"ESXDIAG_VCENTER": vcsim.url, "ESXDIAG_USERNAME": vcsim.username,
               "ESXDIAG_PASSWORD": vcsim.password, "ESXDIAG_THUMBPRINT": vcsim.thumbprint}
        env_file = workdir / "env.sh"
        fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write("".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()))
        (workdir / "lab.json").write_text(json.dumps({
            "pid": os.getpid(), "vcsim_pid": vcsim.process.pid, "proxy_pid": vcsim.proxy.pid,
            "sshd_pid": sshd.process.pid, "sshd_runtime": str(sshd.runtime)}))
        print(f"lab up: vCenter {vcsim.url} (perf proxy pid {vcsim.proxy.pid} in front of vcsim pid "
              f"{vcsim.process.pid}), sshd port {sshd.port} "
              f"(pid {sshd.process.pid}); ESXi hosts "
              + ", ".join(f"{n}={a}" for n, a in sshd.host_addresses.items()) + ", guests "
              + ", ".join(f"{n}={a}" for n, a in sshd.guest_addresses.items()))
        print("try:")
        for line in commands(vcsim, sshd, workdir):
            print(f"  {line}")
        print(f"stop: python tests/lab/lab.py down --workdir {shlex.quote(str(workdir))}  (or Ctrl-C here)",
              flush=True)
        while vcsim.alive() and sshd.process.poll() is None:
            time.sleep(0.5)
        print("lab: vcsim, its proxy or sshd ended by itself; stopping the others", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except SystemExit as exc:
        return 0 if exc.code in (128 + signal.SIGTERM, 0) else int(exc.code or 0)
    finally:
        for lab in (sshd, vcsim):
            if lab is not None:
                lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def down(workdir: Path) -> int:
    workdir = workdir.resolve()
    state_file = workdir / "lab.json"
    if not state_file.exists():
        print(f"no running lab recorded in {state_file}", file=sys.stderr)
        return 1
    state = json.loads(state_file.read_text())
    pids = [state["pid"], state["vcsim_pid"], state["proxy_pid"], state["sshd_pid"]]
    if _alive(state["pid"]):
        os.kill(state["pid"], signal.SIGTERM)  # `up` stops vcsim, the proxy and sshd and removes its directories
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:  # `up` was killed without cleaning up: stop what it started
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(state["sshd_runtime"], ignore_errors=True)
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"lab down: stopped pids {', '.join(map(str, pids))}; removed {workdir}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    ns = parser.parse_args(argv)
    return up(ns.workdir) if ns.action == "up" else down(ns.workdir)


if __name__ == "__main__":
    sys.exit(main())
