"""sshd ForceCommand for the esxdiag SSH lab: plays an ESXi host or a guest.

Usage (from sshd_config): ForceCommand python3 -S emulator.py RUNTIME_DIR
The target is chosen by the server address in SSH_CONNECTION (each host's address plays that
host, with only its own VMs and ports; each guest NIC address that guest); the command comes from
SSH_ORIGINAL_COMMAND. Only the commands esxdiag's specs can render are answered; anything else
gets an error on stderr and exit 127. Every command is appended to RUNTIME_DIR/commands.jsonl
(with accepted true/false) so tests can prove what was and was not run.
Faults (RUNTIME_DIR/faults.json, written by ssh_lab.SshLab.set_fault): "hang", "missing"
(exit 127 with the shell's "not found": busybox wording on the host, dash's in a guest),
"flood" (prints without end), "drop" (kills its own SSH connection) and "ifname" (the guest's
first NIC carries another interface name, {"name"}) entries {"address", "program"} (and an
optional "command": only that exact command line); "refuse" is
handled by sshd's listen addresses, not here.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import sys
import time
from pathlib import Path

import esxi_out
import linux_out
import windows_out
from model import EsxiHost, Lab

HANG_LIMIT_S = 120  # a hung command ends on its own eventually: the lab never leaks processes
_PS = "powershell -NoProfile -NonInteractive -Command "
WINDOWS_SCRIPTS = {
    _PS + '"Get-NetAdapter | Select-Object Name,InterfaceDescription,MacAddress,Status,LinkSpeed,MtuSize,'
    'DriverVersion | ConvertTo-Csv -NoTypeInformation"': lambda lab, vm: windows_out.netadapter(vm),
    _PS + '"Get-NetAdapterAdvancedProperty -Name * -AllProperties | Select-Object Name,DisplayName,'
    'DisplayValue,RegistryKeyword,RegistryValue | ConvertTo-Json -Depth 3"':
        lambda lab, vm: windows_out.advprops(vm),
    _PS + '"Get-NetAdapterRss | Format-List *"': lambda lab, vm: windows_out.rss(vm),
    _PS + '"Get-NetAdapterStatistics | Format-List *"': windows_out.adapter_stats,
    _PS + '"(Get-CimInstance Win32_ComputerSystem).NumberOfLogicalProcessors"':
        lambda lab, vm: windows_out.logical_cpus(vm),
}
_PORT = r"/net/portsets/(?P<ps>[A-Za-z0-9_.:-]+)/ports/(?P<port>\d+)"
_GREP = ["grep", "-rsIn", "-e", "ethtool", "-e", "ring-rx", "-e", "BufferSize", "/etc/NetworkManager/system-connections",
         "/etc/udev/rules.d", "/etc/systemd/system", "/etc/systemd/network", "/etc/rc.local", "/etc/network/interfaces",
         "/etc/network/interfaces.d", "/etc/sysconfig/network-scripts", "/etc/netplan"]


def esxi(esx: EsxiHost, argv: list[str]):
    """The handler (a thunk) for an allowlisted command on the ESXi host ``esx``, else None; nothing
    runs here."""
    if argv == ["vmware", "-vl"]:
        return lambda: esxi_out.version(esx)
    if argv == ["net-stats", "-l"]:
        return lambda: esxi_out.net_stats_list(esx)
    if argv == ["esxcli", "network", "vm", "list"]:
        return lambda: esxi_out.esxcli_vm_list(esx)
    if len(argv) == 7 and argv[:6] == ["esxcli", "network", "vm", "port", "list", "-w"] and argv[6].isdigit():
        return lambda: esxi_out.esxcli_vm_ports(esx, int(argv[6]))
    if len(argv) == 7 and argv[:6] == ["esxcli", "network", "nic", "stats", "get", "-n"] \
            and re.fullmatch(r"vmnic[0-9]{1,4}|vusb[0-9]{1,3}", argv[6]):
        return lambda: esxi_out.esxcli_nic_stats(esx, argv[6])
    if len(argv) == 6 and argv[:3] == ["esxtop", "-b", "-d"] and argv[4] == "-n" \
            and argv[3].isdigit() and argv[5].isdigit():
        return lambda: esxi_out.esxtop(esx, int(argv[3]), int(argv[5]))
    if len(argv) == 4 and argv[:2] == ["vsish", "-e"]:
        verb, path = argv[2], argv[3]
        if verb == "ls" and path == "/net/portsets/":
            return lambda: esxi_out.portsets_ls(esx)
        m = re.fullmatch(_PORT + r"/(?P<node>vmxnet3/rxSummary|clientStats|vmxnet3/rxqueues/(?P<q>\d+)/status)", path)
        if verb == "get" and m:
            ps, port = m["ps"], int(m["port"])
            if m["q"] is not None:
                return lambda: esxi_out.rxqueue_status(esx, ps, port, int(m["q"]), path)
            handler = esxi_out.rx_summary if m["node"] == "vmxnet3/rxSummary" else esxi_out.client_stats
            return lambda: handler(esx, ps, port, path)
        m = re.fullmatch(_PORT + r"/vmxnet3/rxqueues/", path)
        if verb == "ls" and m:
            return lambda: esxi_out.rxqueues_ls(esx, m["ps"], int(m["port"]), path)
    return None


def linux(lab: Lab, vm: dict, argv: list[str]):
    """The handler (a thunk) for an allowlisted Linux command, else None; nothing runs here."""
    simple = {("ip", "-o", "link", "show"): lambda: linux_out.ip_link(vm),
              ("nproc",): lambda: (f"{vm['num_cpu']}\n", "", 0),
              ("ethtool", "--version"): lambda: ("ethtool version 5.16\n", "", 0),
              ("netstat", "-s"): lambda: linux_out.netstat_s(lab, vm),
              ("nstat", "-asz"): lambda: linux_out.nstat(lab, vm),
              tuple(_GREP): lambda: linux_out.ring_persistence(vm)}
    if tuple(argv) in simple:
        return simple[tuple(argv)]
    if len(argv) == 3 and argv[0] == "ethtool" and re.fullmatch(r"[A-Za-z0-9_.:@-]{1,15}", argv[2]):
        iface = argv[2]
        handlers = {"-i": lambda: linux_out.driver(vm, iface), "-g": lambda: linux_out.rings(vm, iface),
                    "-S": lambda: linux_out.stats(lab, vm, iface), "-P": lambda: linux_out.permaddr(vm, iface)}
        return handlers.get(argv[1])
    return None


def windows(lab: Lab, vm: dict, command: str):
    handler = WINDOWS_SCRIPTS.get(command)
    return (lambda: handler(lab, vm)) if handler else None


def _log(runtime: Path, entry: dict) -> None:
    line = json.dumps(entry) + "\n"
    fd = os.open(runtime / "commands.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _fault(lab: Lab, kind: str, address: str, program: str, command: str | None = None) -> dict | None:
    return next((f for f in lab.faults().get(kind, [])
                 if f.get("address") in (None, address) and f.get("program") in (None, program)
                 and f.get("command") in (None, command)), None)


def _hang(seconds: float) -> int:
    """Print nothing; end when the client closes the channel (our stdout pipe breaks) or after
    ``seconds`` (bounded, so the lab never leaks processes)."""
    poller = select.poll()
    poller.register(sys.stdout.fileno(), 0)  # POLLERR/POLLHUP are always reported
    deadline = time.monotonic() + min(seconds, HANG_LIMIT_S)
    while time.monotonic() < deadline:
        if poller.poll(200):
            return 141  # what a shell reports for a command killed by SIGPIPE
    return 0


def _flood(seconds: float, then_drop: bool = False) -> int:
    """Print the same counter line without end, as fast as the reader takes it, until the client
    closes the channel (the pipe breaks) or ``seconds`` pass; ``then_drop``: when the client stops
    the command, end its whole SSH connection too (as some servers do)."""
    line = b"    123456 segments retransmitted and a line that never stops coming\n" * 1024
    deadline = time.monotonic() + min(seconds, HANG_LIMIT_S)
    try:
        while time.monotonic() < deadline:
            os.write(sys.stdout.fileno(), line)
    except OSError:
        return _drop() if then_drop else 141
    return 0


def _drop() -> int:
    """Kill the sshd process serving this connection (the nearest ancestor named sshd*): the
    client sees the TCP connection end in the middle of a command."""
    pid = os.getppid()
    for _ in range(5):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if comm.startswith("sshd"):
            os.kill(pid, 9)
            time.sleep(5)  # killed with it, or ends here
            return 1
        pid = parent
    sys.stderr.write("lab: no sshd ancestor to drop\n")
    return 1


def main() -> int:
    runtime = Path(sys.argv[1])
    lab = Lab.load(runtime)
    command = os.environ.get("SSH_ORIGINAL_COMMAND", "")
    address = os.environ.get("SSH_CONNECTION", "- - - -").split()[2]
    kind, target = lab.target(address)
    vm = target if kind in ("linux", "windows") else None
    renamed = _fault(lab, "ifname", address, None) if vm else None
    if renamed:
        vm["nics"][0]["iface"] = renamed["name"]
    client = " ".join(os.environ.get("SSH_CONNECTION", "- -").split()[:2])  # one per TCP connection
    entry = {"time": time.time(), "address": address, "client": client, "target": vm["name"] if vm else kind,
             "command": command, "accepted": False}
    if kind == "esxi":
        entry["host"] = target["name"]
    try:
        argv = shlex.split(command) if kind != "windows" else [command]
    except ValueError:
        argv = []
    program = argv[0].split()[0] if argv and argv[0] else ""
    if kind == "windows":
        result = windows(lab, vm, command)
    elif kind == "esxi":
        result = esxi(lab.esxi_host(target), argv)
    elif kind == "linux":
        result = linux(lab, vm, argv)
    else:
        result = None
    if result is None:
        _log(runtime, entry)
        sys.stderr.write(f"sh: 1: {program or '(empty)'}: not in the esxdiag lab allowlist\n")
        return 127
    entry["accepted"] = True
    _log(runtime, entry)
    if _fault(lab, "missing", address, program, command):  # ESXi's busybox ash, or dash on a Linux guest
        sys.stderr.write(f"sh: {program}: not found\n" if kind == "esxi" else f"sh: 1: {program}: not found\n")
        return 127
    hang = _fault(lab, "hang", address, program, command)
    if hang:
        return _hang(float(hang.get("seconds", 30)))
    flood = _fault(lab, "flood", address, program, command)
    if flood:
        return _flood(float(flood.get("seconds", 60)), bool(flood.get("then_drop")))
    if _fault(lab, "drop", address, program, command):
        return _drop()
    out, err, rc = result()
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.stdout.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
