"""The vcsim lab: a vCenter simulator on a free 127.0.0.1 port holding tests/lab/scenarios.json.

By hand:   python tests/lab/vcsim_lab.py up [--workdir DIR]   (prints GOVC_* exports, keeps running)
           python tests/lab/vcsim_lab.py down [--workdir DIR]
From code: load this file by path (importlib) and call ``start_lab(workdir) -> Lab``
           (.url .username .password .port .thumbprint .govc(...) .stop()).

vcsim cannot rename hosts or set a host's CPU MHz, so the lab adds the scenario's host
(esx0.lab.local) to an empty cluster with its own local datastore; its cpuMhz stays vcsim's
2294. Each VM gets the scenario's vCPUs, memory, guest id, NIC types and exact MACs, the CPU
limit, guest hostname / IP / full name and tools status, then all VMs are powered on.
Perf values in vcsim are random; they cannot be injected.
"""


import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from esxdiag.collectors.vsphere_session import server_thumbprints

GOVMOMI = "github.com/vmware/govmomi"
GOVMOMI_VERSION = "v0.46.3"
REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "tests" / "lab" / "scenarios.json"
DEFAULT_WORKDIR = REPO / ".lab" / "vcsim"
NETWORK = "VM Network"
USERNAME = "esxdiag"


@dataclass
class Lab:
    url: str  # https://127.0.0.1:<port>/sdk, without user info
    username: str
    password: str = field(repr=False)
    port: int
    thumbprint: str  # SHA-256 of the simulator's certificate, lower-case hex
    workdir: Path
    process: subprocess.Popen = field(repr=False)
    govc_path: str = field(repr=False, default="govc")

    def env(self) -> dict[str, str]:
        """govc-compatible variables for this lab (the URL carries the user and password)."""
        return {"GOVC_URL": f"https://{self.username}:{self.password}@127.0.0.1:{self.port}/sdk",
                "GOVC_INSECURE": "1", "GOVC_PERSIST_SESSION": "false"}

    def govc(self, *args: str, timeout_s: float = 120) -> str:
        env = {**os.environ, **self.env()}
        done = subprocess.run([self.govc_path, *args], env=env, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"govc {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def stop(self, timeout_s: float = 10) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout_s)


def go_tool(name: str, timeout_s: float = 600) -> str:
    """Path to vcsim/govc: PATH, then ~/go/bin, else `go install` it (bounded)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path.home() / "go" / "bin"))
    if found:
        return found
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if go is None:
        raise RuntimeError(f"{name} is not installed and no Go toolchain is available to install it")
    subprocess.run([go, "install", f"{GOVMOMI}/{name}@{GOVMOMI_VERSION}"], check=True, timeout=timeout_s)
    gobin, gopath = subprocess.run([go, "env", "GOBIN", "GOPATH"], capture_output=True, text=True,
                                   check=True).stdout.splitlines()
    return str(Path(gobin) / name if gobin else Path(gopath.split(os.pathsep)[0]) / "bin" / name)


def start_vcsim(workdir: str | Path, args: tuple[str, ...] = ("-vm", "0", "-host", "0", "-cluster", "1",
                                                              "-standalone-host", "0"),
                load: str | Path | None = None, timeout_s: float = 60) -> Lab:
    """vcsim on a free 127.0.0.1 port with a fresh random password; waits until it answers."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    env_file = workdir / "vcsim.env"
    env_file.write_text("")
    password = secrets.token_urlsafe(12)
    argv = [go_tool("vcsim"), "-l", "127.0.0.1:0", "-username", USERNAME, "-password", password,
            "-E", str(env_file), *args]
    if load is not None:
        argv += ["-load", str(load)]
    with open(workdir / "vcsim.log", "ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while "GOVC_URL=" not in env_file.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"vcsim did not start (see {workdir / 'vcsim.log'})")
        time.sleep(0.05)
    url_value = env_file.read_text().split("GOVC_URL=", 1)[1].split()[0]
    port = urlsplit(url_value).port
    return Lab(f"https://127.0.0.1:{port}/sdk", USERNAME, password, port,
               server_thumbprints("127.0.0.1", port)[1], workdir, process, go_tool("govc"))


def build_scenarios(lab: Lab, scenarios_path: str | Path = SCENARIOS) -> dict:
    """Create the scenario host and VMs with govc; returns the scenarios document."""
    scenarios = json.loads(Path(scenarios_path).read_text())
    host = scenarios["host"]["name"]
    datastore = lab.workdir / "datastore"
    shutil.rmtree(datastore, ignore_errors=True)  # VM folders of a previous run
    datastore.mkdir()
    lab.govc("cluster.add", "-cluster", "DC0_C0", "-hostname", host, "-username", "root",
             "-password", "lab", "-noverify")
    lab.govc("datastore.create", "-type", "local", "-name", "LocalDS_0", "-path", str(datastore), host)
    for vm in scenarios["vms"]:
        name, first, guest = vm["name"], vm["nics"][0], vm["guest"]
        lab.govc("vm.create", "-on=false", "-host", host, "-ds", "LocalDS_0", "-c", str(vm["num_cpu"]),
                 "-m", str(vm["memory_mb"]), "-g", guest["guest_id"], "-net", NETWORK,
                 "-net.adapter", first["type"], "-net.address", first["mac"], name)
        for nic in vm["nics"][1:]:
            lab.govc("vm.network.add", "-vm", name, "-net", NETWORK, "-net.adapter", nic["type"],
                     "-net.address", nic["mac"])
        change = ["vm.change", "-vm", name,
                  "-e", f"SET.guest.ipAddress={first['ip']}", "-e", f"SET.guest.hostName={guest['hostname']}",
                  "-e", f"SET.guest.guestFullName={guest['full_name']}",
                  "-e", "SET.guest.toolsStatus=toolsOk", "-e", "SET.guest.toolsRunningStatus=guestToolsRunning"]
        if vm["cpu_limit_mhz"] is not None:  # vcsim replaces the whole allocation: set it in one call
            change += ["-cpu.limit", str(vm["cpu_limit_mhz"]), "-cpu.reservation", "0", "-cpu.shares", "normal"]
        lab.govc(*change)
    lab.govc("vm.power", "-on", *[vm["name"] for vm in scenarios["vms"]])
    return scenarios


def start_lab(workdir: str | Path = DEFAULT_WORKDIR, scenarios_path: str | Path = SCENARIOS) -> Lab:
    """vcsim with the scenario inventory built; call .stop() when done."""
    lab = start_vcsim(workdir)
    try:
        build_scenarios(lab, scenarios_path)
    except BaseException:
        lab.stop()
        raise
    return lab


def _up(workdir: Path) -> int:
    lab = start_lab(workdir)
    state = workdir / "lab.json"
    state.write_text(json.dumps({"pid": os.getpid(), "vcsim_pid": lab.process.pid, "port": lab.port}))
    for key, value in lab.env().items():
        print(f"export {key}='{value}'")
    print(f"export ESXDIAG_THUMBPRINT={lab.thumbprint}")
    print(f"# vcsim pid {lab.process.pid}; stop with: python {Path(__file__).relative_to(REPO)} down", flush=True)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        lab.process.wait()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        lab.stop()
        state.unlink(missing_ok=True)
    return 0


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _down(workdir: Path) -> int:
    state = workdir / "lab.json"
    if not state.exists():
        print(f"no running lab recorded in {state}", file=sys.stderr)
        return 1
    pids = json.loads(state.read_text())
    _terminate(pids["pid"])  # the `up` process stops vcsim and removes lab.json
    deadline = time.monotonic() + 10
    while state.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if state.exists():  # `up` is gone without cleaning up: stop vcsim directly
        _terminate(pids["vcsim_pid"])
        state.unlink()
    print(f"stopped lab on port {pids['port']}")
    return 0


def _terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    ns = parser.parse_args(argv)
    return _up(ns.workdir) if ns.action == "up" else _down(ns.workdir)


if __name__ == "__main__":
    sys.exit(main())
