"""Every named data source, once. Collectors, the bundle layout and the analyzer derive from here.

A spec's ``argv`` is a template: each element is formatted with the capture's params and then
shell-quoted on its own, so a value can never become a second word or a second command.
Params are also validated against ``PARAM_PATTERNS`` before any command is rendered.
Only these commands are ever sent to a host or guest (see esxdiag.collectors.ssh allowlist).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

ESXI = "esxi"
LINUX = "linux"
WINDOWS = "windows"
VCENTER = "vcenter"

PARAM_PATTERNS = {
    "portset": re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}"),  # vSwitch0, DvsPortset-0; never "-..."
    "port": re.compile(r"[0-9]{1,10}"),
    "queue": re.compile(r"[0-9]{1,3}"),
    "world": re.compile(r"[0-9]{1,12}"),
    "vmnic": re.compile(r"vmnic[0-9]{1,4}|vusb[0-9]{1,3}"),
    "iface": re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,14}"),  # Linux IFNAMSIZ-1; never "-..."
    "delay": re.compile(r"[0-9]{1,3}"),
    "iterations": re.compile(r"[0-9]{1,5}"),
}

_PS = "powershell -NoProfile -NonInteractive -Command"
KIB, MIB = 1024, 1024 * 1024
DEFAULT_COMMAND_TIMEOUT_S = 60.0  # per command sent to a host or guest (--command-timeout)
DEFAULT_MAX_BYTES = 4 * MIB  # a command's output past its cap is cut and recorded as truncated
ESXTOP_HEADER_BYTES = 16 * MIB  # esxtop -b: one header line naming every counter (~15k columns: ~1 MB)
ESXTOP_ROW_BYTES = 4 * MIB  # one sample row; ~110 KB at 17,427 columns (docs/raw-formats.md §1)


def esxtop_max_bytes(iterations: int) -> int:
    """The esxtop_batch cap: sized from the rows asked for (delay x iterations covers the window)."""
    return ESXTOP_HEADER_BYTES + max(1, iterations) * ESXTOP_ROW_BYTES


@dataclass(frozen=True)
class Spec:
    name: str
    target: str  # ESXI, LINUX, WINDOWS, VCENTER
    parser: str  # parser kind in esxdiag.parsers.PARSERS
    argv: tuple[str, ...] = ()  # empty for API specs (vcenter)
    params: tuple[str, ...] = ()
    sampled: bool = False  # cumulative counters: captured at the start and end of the window
    about: str = ""
    ok_rc: tuple[int, ...] = (0,)  # exit statuses that still mean "ran and answered"
    max_bytes: int = DEFAULT_MAX_BYTES  # output cap (esxtop_batch: esxtop_max_bytes(iterations))
    words: str = ""  # what the report calls a file of this spec; {param}s are filled in (reports/words.py)
    vm_support: bool = False  # an ESXi vm-support bundle carries its output as commands/<vm_support_file>

    @property
    def vm_support_file(self) -> str | None:
        """vm-support's name for this command's output: the command, "_", the arguments joined
        with "-" (``net-dvs -l`` -> ``net-dvs_-l.txt``); None when vm-support does not carry it."""
        return f"{self.argv[0]}_{'-'.join(self.argv[1:])}.txt" if self.vm_support else None

    @property
    def title(self) -> str:
        """Its words without params: "vsish rxSummary", "guest ethtool -S" (what a bundle holds)."""
        return re.sub(r"\s*\([^)]*\{\w+\}[^)]*\)|\s*\{\w+\}", "", self.words or self.name)

    def render(self, **params: str) -> str:
        """The exact command line for these params; raises ValueError on a bad or missing param."""
        if not self.argv:
            raise ValueError(f"{self.name} is an API capture, not a command")
        missing = [p for p in self.params if p not in params]
        extra = [p for p in params if p not in self.params]
        if missing or extra:
            raise ValueError(f"{self.name}: params {sorted(self.params)} expected, got {sorted(params)}")
        for key, value in params.items():
            if not PARAM_PATTERNS[key].fullmatch(str(value)):
                raise ValueError(f"{self.name}: refusing {key}={value!r}")
        if self.target == WINDOWS:  # fixed scripts, no params: quoted as one -Command string
            return self.argv[0]
        return " ".join(shlex.quote(part.format(**params)) for part in self.argv)


_VMXNET3 = "/net/portsets/{portset}/ports/{port}"

SPECS: dict[str, Spec] = {
    s.name: s
    for s in [
        # --- ESXi host ---
        Spec("esxi_version", ESXI, "text", ("vmware", "-vl"), about="ESXi version and build", words="ESXi version",
             vm_support=True),
        Spec("net_stats_list", ESXI, "net-stats", ("net-stats", "-l"),
             about="every vSwitch port with its MAC and client (VM.ethN) name", words="net-stats -l (host port list)",
             vm_support=True, max_bytes=32 * MIB),  # ~100 bytes a port: 300k ports
        Spec("esxcfg_vswitch", ESXI, "esxcfg-vswitch", ("esxcfg-vswitch", "-l"),
             about="vSwitches and distributed switches: MTU, uplinks, port groups, DVPort clients",
             words="esxcfg-vswitch -l (switch MTU and port groups)", vm_support=True),
        Spec("net_dvs", ESXI, "net-dvs", ("net-dvs", "-l"),
             about="distributed switches: MTU, uplinks, DVPort status and In/Out drop counters",
             words="net-dvs -l (distributed switch ports and counters)", vm_support=True,
             max_bytes=32 * MIB),  # ~4 KB a DVPort
        Spec("esxtop_batch", ESXI, "esxtop", ("esxtop", "-b", "-d", "{delay}", "-n", "{iterations}"),
             params=("delay", "iterations"), about="CPU %RDY/%CSTP/%MLMTD per VM over the window",
             words="esxtop batch capture",
             max_bytes=esxtop_max_bytes(1)),  # the collector passes the cap for its iterations
        Spec("vsish_rxsummary", ESXI, "vsish-rxsummary",
             ("vsish", "-e", "get", _VMXNET3 + "/vmxnet3/rxSummary"), params=("portset", "port"),
             sampled=True, about="vmxnet3 ring-full and out-of-buffer counters for one vNIC",
             words="vsish rxSummary (port {port})"),
        Spec("vsish_clientstats", ESXI, "vsish-clientstats",
             ("vsish", "-e", "get", _VMXNET3 + "/clientStats"), params=("portset", "port"),
             sampled=True, about="port droppedRx/droppedTx", words="vsish clientStats (port {port})"),
        Spec("vsish_rxqueues", ESXI, "vsish-ls",
             ("vsish", "-e", "ls", _VMXNET3 + "/vmxnet3/rxqueues/"), params=("portset", "port"),
             about="rx queues the guest driver opened", words="vsish rx queue list (port {port})"),
        Spec("vsish_rxqueue_status", ESXI, "vsish-rxqueue-status",
             ("vsish", "-e", "get", _VMXNET3 + "/vmxnet3/rxqueues/{queue}/status"),
             params=("portset", "port", "queue"), about="ring #1/#2 size of one rx queue",
             words="vsish rx queue {queue} status (port {port})"),
        Spec("esxcli_vm_list", ESXI, "esxcli-vm-list", ("esxcli", "network", "vm", "list"),
             about="VM world IDs and networks"),
        Spec("esxcli_vm_ports", ESXI, "esxcli-vm-ports",
             ("esxcli", "network", "vm", "port", "list", "-w", "{world}"), params=("world",),
             about="a VM's ports, MACs and portgroups"),
        Spec("esxcli_nic_stats", ESXI, "esxcli-nic-stats",
             ("esxcli", "network", "nic", "stats", "get", "-n", "{vmnic}"), params=("vmnic",),
             sampled=True, about="physical uplink counters", words="esxcli uplink {vmnic} counters"),
        # preflight, before sample 0: the tools of the window exist and run (collectors/preflight.py)
        Spec("vsish_portsets", ESXI, "vsish-ls", ("vsish", "-e", "ls", "/net/portsets/"),
             about="preflight: vsish runs (lists the virtual switches)", words="vsish portset list (preflight)",
             max_bytes=1 * MIB),
        Spec("esxtop_probe", ESXI, "esxtop", ("esxtop", "-b", "-d", "2", "-n", "1"),
             about="preflight: esxtop runs (one batch row)", words="esxtop preflight row",
             max_bytes=esxtop_max_bytes(1)),
        # --- Linux guest ---
        Spec("ip_link", LINUX, "ip-link", ("ip", "-o", "link", "show"), about="interfaces, MTU, MAC",
             words="guest ip link"),
        Spec("nproc", LINUX, "text", ("nproc",), about="online vCPUs in the guest", words="guest nproc",
             max_bytes=4 * KIB),
        Spec("ethtool_driver", LINUX, "ethtool-driver", ("ethtool", "-i", "{iface}"), params=("iface",),
             words="guest ethtool -i {iface}"),
        Spec("ethtool_rings", LINUX, "ethtool-rings", ("ethtool", "-g", "{iface}"), params=("iface",),
             words="guest ethtool -g {iface}"),
        Spec("ethtool_stats", LINUX, "ethtool-stats", ("ethtool", "-S", "{iface}"), params=("iface",),
             sampled=True, about="the driver's counters (vmxnet3: per-queue pkts rx OOB and drops; any other driver: each by name)", words="guest ethtool -S {iface}"),
        Spec("ethtool_permaddr", LINUX, "ethtool-permaddr", ("ethtool", "-P", "{iface}"), params=("iface",),
             about="permanent MAC: joins the guest interface to the vNIC", words="guest ethtool -P {iface}",
             max_bytes=4 * KIB),
        Spec("netstat_s", LINUX, "netstat", ("netstat", "-s"), sampled=True, about="TCP retransmits",
             words="guest netstat -s", max_bytes=1 * MIB),  # ~10 KB on a real guest
        Spec("nstat", LINUX, "netstat", ("nstat", "-asz"), sampled=True,
             about="TCP retransmits (iproute2), absolute, no history update", words="guest nstat",
             max_bytes=1 * MIB),
        Spec("ring_persistence", LINUX, "ring-persistence",
             ("grep", "-rsIn", "-e", "ethtool", "-e", "ring-rx", "-e", "BufferSize",
              "/etc/NetworkManager/system-connections", "/etc/udev/rules.d", "/etc/systemd/system",
              "/etc/systemd/network", "/etc/rc.local", "/etc/network/interfaces",
              "/etc/network/interfaces.d", "/etc/sysconfig/network-scripts", "/etc/netplan"),
             about="where (if anywhere) ring sizes are made persistent", words="guest ring persistence search",
             ok_rc=(0, 1, 2)),  # grep: 1 = no match, 2 = a listed path does not exist on this distro
        Spec("ethtool_version", LINUX, "text", ("ethtool", "--version"), about="preflight: ethtool runs",
             words="guest ethtool --version (preflight)", max_bytes=4 * KIB),
        # --- Windows guest (OpenSSH to PowerShell); fixed scripts, no params ---
        Spec("win_netadapter", WINDOWS, "win-netadapter",
             (f"{_PS} \"Get-NetAdapter | Select-Object Name,InterfaceDescription,MacAddress,Status,"
              "LinkSpeed,MtuSize,DriverVersion | ConvertTo-Csv -NoTypeInformation\"",),
             words="Windows Get-NetAdapter"),
        Spec("win_advprops", WINDOWS, "win-advprops",
             (f"{_PS} \"Get-NetAdapterAdvancedProperty -Name * -AllProperties | Select-Object Name,"
              "DisplayName,DisplayValue,RegistryKeyword,RegistryValue | ConvertTo-Json -Depth 3\"",),
             words="Windows Get-NetAdapterAdvancedProperty"),
        Spec("win_rss", WINDOWS, "win-rss",
             (f"{_PS} \"Get-NetAdapterRss | Format-List *\"",), words="Windows Get-NetAdapterRss"),
        Spec("win_stats", WINDOWS, "win-stats",
             (f"{_PS} \"Get-NetAdapterStatistics | Format-List *\"",), sampled=True,
             words="Windows Get-NetAdapterStatistics"),
        Spec("win_cpu", WINDOWS, "text",
             (f"{_PS} \"(Get-CimInstance Win32_ComputerSystem).NumberOfLogicalProcessors\"",),
             words="Windows processor count", max_bytes=4 * KIB),
        # --- vCenter API captures (written as JSON by esxdiag.collectors.vsphere) ---
        Spec("vsphere_vm", VCENTER, "vsphere-vm", params=("vm",),
             about="VM inventory: vNICs, CPU allocation, host, guest", words="vCenter VM inventory"),
        Spec("vsphere_perf", VCENTER, "vsphere-perf", params=("vm",),
             about="per-vCPU cpu.ready/costop/maxlimited, per-vNIC drops", words="vCenter performance counters"),
        Spec("vsphere_events", VCENTER, "vsphere-events", params=("vm",),
             about="the VM's migrations (vMotion, DRS) and other events in the window",
             words="vCenter events of the VM"),
        Spec("vsphere_host_perf", VCENTER, "vsphere-host-perf", params=("host",),
             about="the host's per-vmnic net.droppedRx/errorsRx", words="vCenter host uplink counters ({host})"),
    ]
}


def spec(name: str) -> Spec:
    try:
        return SPECS[name]
    except KeyError:
        raise ValueError(f"unknown capture spec {name!r}") from None


def allowed_commands() -> list[Spec]:
    """Specs that render to a shell command: the complete allowlist for hosts and guests."""
    return [s for s in SPECS.values() if s.argv]
