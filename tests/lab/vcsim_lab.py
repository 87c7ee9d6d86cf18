"""The vcsim lab: the lab's vCenter on a free 127.0.0.1 port holding tests/lab/scenarios.json.

By hand:   python tests/lab/vcsim_lab.py up [--workdir DIR]   (prints GOVC_* exports, keeps running)
           python tests/lab/vcsim_lab.py down [--workdir DIR]
From code: load this file by path (importlib) and call ``start_lab(workdir) -> Lab``
           (.url .username .password .port .thumbprint .govc(...) .stop()).

vcsim cannot rename hosts or set a host's CPU MHz, so the lab adds the scenario's hosts
(esx0.lab.local, esx1.lab.local) to an empty cluster, each with its own local datastore
(LocalDS_0, LocalDS_1); their cpuMhz stays vcsim's 2294; their product is vcsim's own ESXi 8.0.2
(build-21997540), which the emulated hosts print too. Each VM is created on the host its
scenario ``host`` names (iperf-uplink-loss on esx1, every other on esx0) and gets the scenario's hardware version (config.version, ``govc vm.create -version vmx-NN``),
vCPUs, memory, guest id, NIC types and exact MACs, the CPU limit, guest hostname / IP / full name
and tools status, then all VMs are powered on. vcsim labels a vNIC with govc's device name
("ethernet--7"), a real vCenter "Network adapter 1", "Network adapter 2" in the order they were
added; vcsim keeps a label a client sends, so the lab reconfigures each VM's vNICs (an Edit of
deviceInfo.label, pyvmomi: govc cannot set it) with the names vCenter gives them.

Where the lab's vCenter numbers come from: vcsim's performance values are random and cannot be
injected, so ``start_lab`` puts tests/lab/vcenter_proxy.py in front of vcsim (``.url``,
``.port``, ``.thumbprint`` are the proxy's; ``.vcsim_port`` is vcsim's). It forwards every request
to vcsim unchanged except QueryPerf for the scenario VMs and hosts, which it answers from the same
model the emulated ESXi hosts print (tests/lab/emulator/vcenter_perf.py over model.py): per 20 s
sample, net.droppedRx = the scenario's "running out of buffers" rate x 20 per vNIC (device key)
and for the aggregate "", net.packetsRx = "pkts rx ok" x 20, cpu.ready / costop / maxlimited =
the scenario's percentage x 200 ms per vCPU ("0".."n-1") and summed for ""; for a host,
net.droppedRx = its vmnic's "Receive packets dropped" + "Receive missed errors" gained and
net.errorsRx = "Total receive errors" gained, per vmnic ("vmnicN") and summed for "", and
cpu.usage.average = its esxtop Physical Cpu % ("cpu_used_pct"). ``start_lab(started=EPOCH)``
sets the model's time origin (the SSH lab's, so vCenter's samples are differences of what the
emulated hosts print). Every other entity and every other call (inventory) is vcsim's own.
``start_vcsim`` is vcsim alone (the fleet tests rely on its own behaviour);
``start_lab(perf_proxy=False)`` likewise.
"""


import argparse
import dataclasses
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

from pyVim import connect as pyvim_connect
from pyVmomi import vim

from esxdiag.collectors.vsphere_session import server_thumbprints

GOVMOMI = "github.com/vmware/govmomi"
GOVMOMI_VERSION = "v0.46.3"
REPO = Path(__file__).resolve().parents[2]
PROXY = Path(__file__).resolve().parent / "vcenter_proxy.py"
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
    thumbprint: str  # SHA-256 of the certificate clients see (vcsim's, or the proxy's), lower-case hex
    workdir: Path
    process: subprocess.Popen = field(repr=False)  # vcsim
    govc_path: str = field(repr=False, default="govc")
    proxy: subprocess.Popen | None = field(repr=False, default=None)  # vcenter_proxy.py in front of vcsim
    vcsim_port: int | None = None  # vcsim's own port when the proxy is in front of it

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

    def alive(self) -> bool:
        return self.process.poll() is None and (self.proxy is None or self.proxy.poll() is None)

    def stop(self, timeout_s: float = 10) -> None:
        for process in (self.proxy, self.process):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=timeout_s)


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
    """Create the scenario hosts and VMs with govc; returns the scenarios document."""
    scenarios = json.loads(Path(scenarios_path).read_text())
    datastores = lab.workdir / "datastore"
    shutil.rmtree(datastores, ignore_errors=True)  # VM folders of a previous run
    store_of = {}
    for host in scenarios["hosts"]:
        path = datastores / host["datastore"]
        path.mkdir(parents=True)
        lab.govc("cluster.add", "-cluster", "DC0_C0", "-hostname", host["name"], "-username", "root",
                 "-password", "lab", "-noverify")
        lab.govc("datastore.create", "-type", "local", "-name", host["datastore"], "-path", str(path), host["name"])
        store_of[host["name"]] = host["datastore"]
    for vm in scenarios["vms"]:
        name, first, guest, host = vm["name"], vm["nics"][0], vm["guest"], vm["host"]
        hardware = ["-version", vm["hardware_version"]] if vm.get("hardware_version") else []
        lab.govc("vm.create", "-on=false", "-host", host, "-ds", store_of[host], "-c", str(vm["num_cpu"]),
                 "-m", str(vm["memory_mb"]), "-g", guest["guest_id"], "-net", NETWORK,
                 "-net.adapter", first["type"], "-net.address", first["mac"], *hardware, name)
        for nic in vm["nics"][1:]:
            lab.govc("vm.network.add", "-vm", name, "-net", NETWORK, "-net.adapter", nic["type"],
                     "-net.address", nic["mac"])
    label_vnics(lab, [vm["name"] for vm in scenarios["vms"]])  # first: vcsim's edit of a vNIC drops its guest IP
    for vm in scenarios["vms"]:
        name, first, guest = vm["name"], vm["nics"][0], vm["guest"]
        change = ["vm.change", "-vm", name,
                  "-e", f"SET.guest.ipAddress={first['ip']}", "-e", f"SET.guest.hostName={guest['hostname']}",
                  "-e", f"SET.guest.guestFullName={guest['full_name']}",
                  "-e", "SET.guest.toolsStatus=toolsOk", "-e", "SET.guest.toolsRunningStatus=guestToolsRunning"]
        if vm["cpu_limit_mhz"] is not None:  # vcsim replaces the whole allocation: set it in one call
            change += ["-cpu.limit", str(vm["cpu_limit_mhz"]), "-cpu.reservation", "0", "-cpu.shares", "normal"]
        lab.govc(*change)
    lab.govc("vm.power", "-on", *[vm["name"] for vm in scenarios["vms"]])
    return scenarios


def label_vnics(lab: Lab, vm_names: list[str], timeout_s: float = 60) -> None:
    """Give each named VM's vNICs vCenter's labels, "Network adapter N" in device key order (the
    order they were added)."""
    si = pyvim_connect.SmartConnect(host="127.0.0.1", port=lab.port, user=lab.username, pwd=lab.password,
                                    disableSslCertValidation=True, httpConnectionTimeout=timeout_s)
    try:
        view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.VirtualMachine], True)
        by_name = {vm.name: vm for vm in view.view}
        view.DestroyView()
        for name in vm_names:
            devices = by_name[name].config.hardware.device
            nics = sorted((d for d in devices if isinstance(d, vim.vm.device.VirtualEthernetCard)), key=lambda d: d.key)
            edits = []
            for number, nic in enumerate(nics, start=1):
                nic.deviceInfo = vim.Description(label=f"Network adapter {number}", summary=nic.deviceInfo.summary)
                edits.append(vim.vm.device.VirtualDeviceSpec(operation="edit", device=nic))
            task = by_name[name].ReconfigVM_Task(vim.vm.ConfigSpec(deviceChange=edits))
            deadline = time.monotonic() + timeout_s
            while task.info.state not in ("success", "error"):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"relabelling {name}'s vNICs did not finish in {timeout_s:.0f} s")
                time.sleep(0.05)
            if task.info.state == "error":
                raise RuntimeError(f"relabelling {name}'s vNICs failed: {task.info.error.msg}")
    finally:
        pyvim_connect.Disconnect(si)


def proxy_model(lab: Lab, scenarios_path: str | Path = SCENARIOS, started: float | None = None) -> dict:
    """What vcenter_proxy.py needs: vcsim's counter ids, each scenario VM's moid and vNIC device
    keys (matched by MAC, in scenario order), each scenario host's moid, and the model's time
    origin (``started``, epoch seconds; now when None)."""
    document = json.loads(Path(scenarios_path).read_text())
    scenarios = {vm["name"]: vm for vm in document["vms"]}
    host_names = [host["name"] for host in document["hosts"]]
    counters = json.loads(lab.govc("object.collect", "-json", "-s", "PerformanceManager:PerfMgr", "perfCounter"))
    vms = {}
    for found in json.loads(lab.govc("vm.info", "-json", *scenarios))["virtualMachines"]:
        keys = {d["macAddress"]: d["key"] for d in found["config"]["hardware"]["device"] if d.get("macAddress")}
        vms[found["self"]["value"]] = {"name": found["name"],
                                       "device_keys": [keys[nic["mac"]] for nic in scenarios[found["name"]]["nics"]]}
    if sorted(vm["name"] for vm in vms.values()) != sorted(scenarios):
        raise RuntimeError(f"vcsim does not hold exactly the scenario VMs: {sorted(v['name'] for v in vms.values())}")
    hosts = {found["self"]["value"]: {"name": found["name"]}
             for found in json.loads(lab.govc("host.info", "-json", *host_names))["hostSystems"]}
    if sorted(host["name"] for host in hosts.values()) != sorted(host_names):
        raise RuntimeError(f"vcsim does not hold the scenario hosts: {sorted(h['name'] for h in hosts.values())}")
    return {"scenarios": str(Path(scenarios_path).resolve()), "started": time.time() if started is None else started,
            "vms": vms, "hosts": hosts,
            "counters": {c["key"]: f"{c['groupInfo']['key']}.{c['nameInfo']['key']}.{c['rollupType']}"
                         for c in counters}}


def start_proxy(lab: Lab, scenarios_path: str | Path = SCENARIOS, timeout_s: float = 30,
                started: float | None = None) -> Lab:
    """vcenter_proxy.py in front of ``lab``'s vcsim; returns the Lab as clients see it (the proxy's
    URL, port and thumbprint, govc through it too). ``started``: the model's time origin."""
    model_file, state_file = lab.workdir / "proxy-model.json", lab.workdir / "proxy-state.json"
    model_file.write_text(json.dumps(proxy_model(lab, scenarios_path, started)))
    state_file.unlink(missing_ok=True)
    argv = [sys.executable, str(PROXY), "--upstream-port", str(lab.port), "--upstream-thumbprint", lab.thumbprint,
            "--model", str(model_file), "--state", str(state_file)]
    with open(lab.workdir / "proxy.log", "ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while not state_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait(timeout=10)
            raise RuntimeError(f"the lab's vCenter proxy did not start (see {lab.workdir / 'proxy.log'})")
        time.sleep(0.05)
    state = json.loads(state_file.read_text())
    return dataclasses.replace(lab, url=f"https://127.0.0.1:{state['port']}/sdk", port=state["port"],
                               thumbprint=state["thumbprint"], proxy=process, vcsim_port=lab.port)


def start_lab(workdir: str | Path = DEFAULT_WORKDIR, scenarios_path: str | Path = SCENARIOS,
              perf_proxy: bool = True, started: float | None = None) -> Lab:
    """The lab's vCenter with the scenario inventory built (vcsim, behind the perf proxy unless
    ``perf_proxy`` is false); call .stop() when done. ``started`` (epoch seconds) is the model's
    time origin: pass the SSH lab's (SshLab.started) so both tell the same counters; now when None."""
    lab = start_vcsim(workdir)
    try:
        build_scenarios(lab, scenarios_path)
        return start_proxy(lab, scenarios_path, started=started) if perf_proxy else lab
    except BaseException:
        lab.stop()
        raise


def _up(workdir: Path) -> int:
    lab = start_lab(workdir)
    state = workdir / "lab.json"
    state.write_text(json.dumps({"pid": os.getpid(), "vcsim_pid": lab.process.pid, "proxy_pid": lab.proxy.pid,
                                 "port": lab.port}))
    for key, value in lab.env().items():
        print(f"export {key}='{value}'")
    print(f"export ESXDIAG_THUMBPRINT={lab.thumbprint}")
    print(f"# vcsim pid {lab.process.pid} behind the perf proxy (pid {lab.proxy.pid}); "
          f"stop with: python {Path(__file__).relative_to(REPO)} down", flush=True)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        while lab.alive():
            time.sleep(0.5)
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
    if state.exists():  # `up` is gone without cleaning up: stop vcsim and the proxy directly
        _terminate(pids["vcsim_pid"])
        _terminate(pids["proxy_pid"])
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
