"""Exact per-OS commands, as data. esxdiag shows them; it never runs them.
Every name that came from a host or guest is quoted for the shell it will be pasted into."""

from __future__ import annotations

import re
import shlex

from esxdiag.join.device import runs_as
from esxdiag.result import Remediation
from esxdiag.parsers.netstats import normalize_mac
from esxdiag.specs import PARAM_PATTERNS

DISRUPTION_LINUX = ("ethtool -G re-initialises the vNIC: expect a brief traffic interruption "
                    "(existing TCP sessions usually survive, UDP/real-time traffic may see loss). "
                    "Use a change window on production VMs.")
DISRUPTION_WINDOWS = ("Changing an advanced property makes Windows disable and re-enable the adapter: "
                      "connections drop for a few seconds. Use a change window on production VMs.")


_PS_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"  # PowerShell ends a '...' string on any of these


def ps_quote(text: str) -> str:
    """A PowerShell single-quoted literal: every quote character PowerShell accepts is doubled."""
    return "'" + "".join(c * 2 if c in _PS_SINGLE_QUOTES else c for c in text) + "'"


def ps_name(text: str) -> str:
    """A -Name argument: -Name takes wildcards (Get-VM, *-NetAdapter*), so ``* ? [ ]`` and the backtick are
    escaped with a backtick ([WildcardPattern]::Escape) before quoting: 'web*' must not match every web VM."""
    return ps_quote(re.sub(r"([*?\[\]`])", r"`\1", text))


def govc_vm(name: str) -> str:
    """A govc -vm argument: govc matches it as an inventory path pattern (a VM named 'sq[1]vm' would select
    'sq1vm'), so pattern characters are backslash-escaped, then the whole is quoted for bash."""
    return shlex.quote(re.sub(r"([*?\[\]\\])", r"\\\1", name))


def sh_arg(value: str | int | None, placeholder: str) -> str:
    """One bash word: the value quoted, or a quoted '<placeholder>' that the tool rejects harmlessly
    (an unquoted <...> would be a redirection)."""
    return shlex.quote(str(value) if value is not None and value != "" else f"<{placeholder}>")


def mac_text(mac: str | None) -> str:
    """A MAC for pasting into a rule file: only a well-formed one, else a placeholder."""
    try:
        return normalize_mac(mac) if mac else "<mac>"
    except ValueError:
        return "<mac>"


def ifcfg_name(iface: str | None) -> str:
    """The interface name for a line that network scripts source: only a valid name, verbatim."""
    return iface if iface and PARAM_PATTERNS["iface"].fullmatch(iface) else "<iface>"


def memory_cost(current: int | None, target: int, queues: int | None, kb_per_entry: float) -> str:
    if current is None or current >= target:
        return f"about {kb_per_entry:g} KB of guest memory per added ring entry per rx queue"
    q = queues or 1
    mb = (target - current) * q * kb_per_entry / 1024
    return (f"about {mb:.1f} MB more guest memory ({target - current} entries x {q} rx "
            f"queue{'s' if q != 1 else ''} x ~{kb_per_entry:g} KB per buffer; the seed measured ~18 MB for ring 1, "
            "2 queues, 256 -> 4096)")


def linux_raise_ring(iface: str | None, mac: str | None, ring: int, current: int | None, target: int,
                     queues: int | None, kb_per_entry: float, mtu: int | None, runs: int | None = None,
                     version: str | None = None, settings: tuple = ()) -> Remediation:
    """``target`` is the request; ``runs`` what the device runs it as (v7 powers of two, pre-v7 jumbo 96s).
    ``settings``: the guest's existing ring settings for this interface (RingSetting): one that sets this ring
    is edited, since a second mechanism would race it at boot."""
    dev = sh_arg(iface, "iface")
    option = "rx" if ring == 1 else "rx-jumbo"
    runs = runs or target
    notes = []
    if not iface:
        notes.append(f"find the interface first: ip -o link | grep -i {shlex.quote(mac_text(mac))}")
    if ring == 1 and mtu and mtu > 3050 and version is None:
        notes.append(f"with MTU {mtu} a pre-v7 vmxnet3 device runs {target} as {runs_as(target, 1, 'pre-v7', mtu)} "
                     f"(multiples of 96); a v7 device (VM hardware 20 on ESXi 8) runs {target}. Never ask a v7 device for 4032: it "
                     "runs as 2048")
    elif runs != target:
        notes.append(f"this {version or 'vmxnet3'} device runs {target} as {runs}: ethtool -g will show {runs}")
    if ring == 2:
        notes.append("ring 2 only receives jumbo frames or LRO aggregates; with MTU 1500 and LRO off it stays unused")
    return Remediation(
        os="linux",
        title=f"Raise RX ring {ring} to {target} on {iface or 'the interface'}",
        commands=(f"ethtool -G {dev} {option} {target}", f"ethtool -g {dev}   # verify: Current hardware settings"),
        persistence=ring_persistence_steps(iface, mac, ring, target, settings, version, mtu),
        disruption=DISRUPTION_LINUX,
        memory_cost=memory_cost(current, runs, queues, kb_per_entry),
        notes=tuple(notes),
    )


def ring_persistence_steps(iface: str | None, mac: str | None, ring: int, target: int, settings: tuple = (),
                           version: str | None = None, mtu: int | None = None) -> tuple[str, ...]:
    """Where to make a ring size survive a reboot: the guest's own setting for this ring when it has one
    ("edit this"), else the usual mechanisms ("add one of these")."""
    option = "rx" if ring == 1 else "rx-jumbo"
    mine = [s for s in settings if s.value(option) is not None]
    if mine:
        return tuple(edit_setting_words(s, option, target, version, mtu) for s in mine) + (
            "Edit that setting rather than adding another mechanism: two would race at boot, and the one "
            "that runs last wins.",)
    dev = sh_arg(iface, "iface")
    nm_key = "ethtool.ring-rx" if ring == 1 else "ethtool.ring-rx-jumbo"
    return (
        f"NetworkManager: nmcli connection modify \"$(nmcli -g GENERAL.CONNECTION device show {dev})\" "
        f"{nm_key} {target}",
        f"udev: echo 'ACTION==\"add\", SUBSYSTEM==\"net\", ATTR{{address}}==\"{mac_text(mac)}\", "
        f"RUN+=\"/sbin/ethtool -G $name {option} {target}\"' > /etc/udev/rules.d/60-vmxnet3-rings.rules",
        f"RHEL ifcfg: ETHTOOL_OPTS=\"-G {ifcfg_name(iface)} {option} {target}\" in "
        f"/etc/sysconfig/network-scripts/ifcfg-{ifcfg_name(iface)}",
        f"Debian ifupdown: post-up /sbin/ethtool -G {dev} {option} {target} under the iface stanza in "
        "/etc/network/interfaces",
        "ethtool -G alone is lost at the next reboot.",
    )


def edit_setting_words(setting, option: str, target: int, version: str | None, mtu: int | None) -> str:
    """"edit FILE line N (systemd unit): it sets rx 4032 -> change it to 4096", with the size the device runs
    the old value as when that differs."""
    old = setting.value(option)
    ring = 1 if option == "rx" else 2
    runs = runs_as(old, ring, version, mtu) if version else None
    rounded = f" (a {version} vmxnet3 device runs {old} as {runs})" if runs is not None and runs != old else ""
    what = MECHANISM_WORDS.get(setting.mechanism, setting.mechanism)
    where = f"{shlex.quote(setting.file)} line {setting.line} ({what})"
    if old == target:  # nothing to edit: the setting is right but did not take effect at the last boot
        return (f"{where} already sets {option} {target} at boot, yet the ring runs smaller: check that it runs "
                "(systemctl status, journalctl -b, nmcli connection show) rather than adding another setting")
    return f"edit {where}: it sets {option} {old}{rounded} -> change it to {target}"


MECHANISM_WORDS = {"networkmanager": "NetworkManager connection", "udev": "udev rule", "systemd": "systemd unit", "networkd": "systemd-networkd .link file",
                   "rc.local": "rc.local script", "ifupdown": "ifupdown stanza", "network-scripts": "ifcfg file",
                   "netplan": "netplan file", "other": "configuration file"}


def linux_persist_ring(iface: str | None, mac: str | None, ring: int, size: int) -> Remediation:
    """The ring already runs at ``size``: nothing to change now, only to keep at boot."""
    return Remediation(
        os="linux", title=f"Keep RX ring {ring} = {size} on {iface or 'the interface'} across reboots",
        persistence=ring_persistence_steps(iface, mac, ring, size),
        notes=("The ring already runs at this size: no ethtool -G now, only a setting applied at boot.",))


WINDOWS_BUFFERS_MAX = 8192  # Small / Large Rx Buffers: the vmxnet3 Windows driver's largest value


def windows_raise_ring(adapter: str | None, ring: int, current: int | None, target: int,
                       queues: int | None, kb_per_entry: float, buffers: int | None = None) -> Remediation:
    """Rx Ring #N Size and the buffer pool it is filled from (Small Rx Buffers for ring 1, Large Rx Buffers
    for ring 2), raised together; a property already at its target is left out (the caller never asks when
    both are)."""
    name = ps_name(adapter) if adapter else ps_quote("<adapter>")
    ring_key, buf_key, buf_name = (("MaxRxRing1Length", "NumRxBuffersSmall", "Small Rx Buffers") if ring == 1 else
                                   ("MaxRxRing2Length", "NumRxBuffersLarge", "Large Rx Buffers"))
    raise_ring = current is None or current < target
    raise_buffers = buffers is None or buffers < WINDOWS_BUFFERS_MAX
    cmds, parts = [], []
    if raise_ring:
        cmds.append(f"Set-NetAdapterAdvancedProperty -Name {name} -RegistryKeyword {ring_key} -RegistryValue {target}")
        parts.append(f"Rx Ring #{ring} Size to {target}")
    if raise_buffers:
        cmds.append(f"Set-NetAdapterAdvancedProperty -Name {name} -RegistryKeyword {buf_key} "
                    f"-RegistryValue {WINDOWS_BUFFERS_MAX}")
        parts.append(f"{buf_name} to {WINDOWS_BUFFERS_MAX}"
                     + (f" (now {buffers:,})" if buffers is not None and not raise_ring else ""))
    cmds.append(f"Get-NetAdapterAdvancedProperty -Name {name} | Format-List DisplayName,DisplayValue,RegistryKeyword"
                "   # verify")
    notes: tuple[str, ...] = ()
    if not raise_ring:
        notes = (f"Rx Ring #{ring} Size is already {current:,}: the ring cannot grow, but the {buf_name} pool it is "
                 f"filled from can (up to {WINDOWS_BUFFERS_MAX:,}); VMware raises both together. No vCPU cost.",)
    return Remediation(
        os="windows", title=f"Raise {' and '.join(parts)} on {adapter or 'the adapter'}"
        + (" (jumbo frames only)" if ring == 2 else ""), commands=tuple(cmds),
        persistence=("Advanced properties are stored in the registry and survive reboots.",
                     "Windows Server 2008 R2 has no NetAdapter cmdlets: set the same values in Device Manager > "
                     f"adapter > Properties > Advanced (Rx Ring #{ring} Size, {buf_name})."),
        disruption=DISRUPTION_WINDOWS,
        memory_cost=memory_cost(current, target, queues, kb_per_entry) if raise_ring else
        f"about {kb_per_entry:g} KB of guest memory per added buffer",
        notes=notes,
    )


def windows_enable_rss(adapter: str | None, vcpus: int | None) -> Remediation:
    name = ps_name(adapter) if adapter else ps_quote("<adapter>")
    return Remediation(
        os="windows",
        title=f"Enable Receive Side Scaling on {adapter or 'the adapter'} so receive work spreads over "
              f"{vcpus or 'all'} vCPUs",
        commands=(f"Enable-NetAdapterRss -Name {name}",
                  f"Get-NetAdapterRss -Name {name}   # verify: Enabled True, NumberOfReceiveQueues > 1",
                  "netsh int tcp show global   # Receive-Side Scaling State must be enabled"),
        persistence=("Stored in the registry; survives reboots.",
                     "Windows Server 2008 R2: Device Manager > adapter > Advanced > Receive Side Scaling = Enabled, "
                     "and netsh int tcp set global rss=enabled."),
        disruption=DISRUPTION_WINDOWS,
        notes=("Old vmxnet3 Windows drivers had RSS issues: update VMware Tools first and test throughput after.",),
    )


def windows_rss_queues(adapter: str | None, vcpus: int | None) -> Remediation:
    """RSS is on but uses fewer receive queues than vCPUs: raise its queue count (an advanced property)."""
    name = ps_name(adapter) if adapter else ps_quote("<adapter>")
    return Remediation(
        os="windows", title=f"Use {vcpus or 'more'} RSS receive queues on {adapter or 'the adapter'}",
        commands=(f"Set-NetAdapterRss -Name {name} -NumberOfReceiveQueues {vcpus or '<vCPUs>'}",
                  f"Get-NetAdapterRss -Name {name}   # verify: NumberOfReceiveQueues"),
        persistence=("Stored in the registry (Maximum Number of RSS Queues, *NumRssQueues); survives reboots.",),
        disruption=DISRUPTION_WINDOWS,
    )


def vsphere_remove_limit(vm: str, limit_mhz: int | None) -> Remediation:
    return Remediation(
        os="vsphere",
        title=f"Remove or raise the CPU limit{f' of {limit_mhz:,} MHz' if limit_mhz else ''} on {vm}",
        commands=(f"Get-VM -Name {ps_name(vm)} | Get-VMResourceConfiguration | "
                  "Set-VMResourceConfiguration -CpuLimitMhz $null",
                  f"govc vm.change -vm {govc_vm(vm)} -cpu.limit -1"),
        persistence=("The VM's resource allocation is part of its configuration: it persists.",
                     "vSphere Client: Edit Settings > CPU > Limit > Unlimited."),
        disruption="None: takes effect immediately, no reboot.",
        notes=("Raising the ring on a CPU-throttled VM only delays the drops and costs guest memory.",),
    )


def govc_path(path: str) -> str:
    """An inventory path for govc: its pattern characters escaped (a pool named 'gold*' must not match
    'gold-2'), then quoted for bash."""
    return shlex.quote(re.sub(r"([*?\[\]\\])", r"\\\1", path))


def vsphere_remove_pool_limit(pool: str, moid: str | None, path: str | None, limit_mhz: int | None,
                              vapp: bool = False) -> Remediation:
    """A CPU limit on a resource pool or vApp above the VM: only that object's setting removes it. By MOID in
    PowerCLI (pool names repeat across clusters, and a name would change every match)."""
    kind = "vApp" if vapp else "resource pool"
    limit = f" of {limit_mhz:,} MHz" if limit_mhz else ""
    commands: tuple[str, ...]
    if vapp:
        get = f"Get-VApp -Id {ps_quote('VirtualApp-' + moid)}" if moid else f"Get-VApp -Name {ps_name(pool)}"
        commands = (f"{get} | Set-VApp -CpuLimitMhz $null",)
    else:
        get = f"Get-ResourcePool -Id {ps_quote('ResourcePool-' + moid)}" if moid else \
            f"Get-ResourcePool -Name {ps_name(pool)}"
        commands = (f"{get} | Set-ResourcePool -CpuLimitMhz $null",
                    f"govc pool.change -cpu.limit -1 {govc_path(path) if path else sh_arg(None, 'pool path')}")
    notes = ["The VM's own limit is not the one throttling it: a VM command would change nothing.",
             "The limit applies to every VM in this " + kind + " together: check whether it was set on purpose "
             "(a charge-back or tenant cap) before removing it; raising it is the other choice."]
    if not path and not vapp:
        notes.append("the pool's inventory path was not read: govc find / -type p lists them")
    return Remediation(
        os="vsphere", title=f"Remove or raise the CPU limit{limit} on the {kind} {pool}"
        + (f" ({path})" if path else ""), commands=commands,
        persistence=("A pool's resource allocation is part of the inventory: it persists.",
                     f"vSphere Client: the {kind} > Edit Settings > CPU > Limit > Unlimited."),
        disruption="None: takes effect immediately, no reboot.", notes=tuple(notes))


def vsphere_find_cpu_limit(vm: str, vm_limit_known: bool) -> Remediation:
    """%MLMTD says a limit throttles the VM, and which object holds it was not read: read-only steps that
    find it (the VM's own limit when that is unknown too, then its resource pool and the pool's parents)."""
    find_vm = f"$(govc find / -type m -name {govc_vm(vm)})"
    commands = []
    if not vm_limit_known:
        commands.append(f"govc vm.info -r {govc_vm(vm)} | grep -i limit   # the VM's own CPU limit (-1: none)")
    commands += [f"govc ls -L \"$(govc object.collect -s \"{find_vm}\" resourcePool)\"   # the VM's resource "
                 "pool (or vApp)",
                 "govc find / -type p | xargs -d '\\n' govc pool.info | grep -E 'Path|CPU Limit'   # every pool's "
                 "CPU limit (-1: none); the VM's pool and its parents are on its path",
                 f"Get-VM -Name {ps_name(vm)} | Select-Object Name,ResourcePool   # PowerCLI: the pool (or vApp)",
                 "Get-ResourcePool | Select-Object Name,Parent,CpuLimitMhz   # PowerCLI: every pool's limit"]
    return Remediation(
        os="vsphere", title=f"Find the CPU limit that throttles {vm}" + (
            "" if not vm_limit_known else ": the VM has none of its own, so a resource pool (or vApp) above it"),
        commands=tuple(commands),
        notes=("Read-only: these commands change nothing.",
               "vSphere Client: the VM > Summary > Related Objects shows its resource pool or vApp; that object's "
               "and each parent's Edit Settings > CPU > Limit.",
               "The root pool of a cluster or host (Resources) shows the capacity as its limit: it is not a setting. "
               "Then remove the limit on the pool that has one (Set-ResourcePool -CpuLimitMhz $null; govc "
               "pool.change -cpu.limit -1 POOL-PATH); a VM command would change nothing."))


def vsphere_relieve_contention(vm: str, costop: bool, vcpus: int | None = None) -> Remediation:
    """Fewer vCPUs only for co-stop on a VM that has more than one (a 1-vCPU VM cannot have fewer)."""
    steps = [f"govc vm.migrate -vm {govc_vm(vm)} -host '<less-loaded-host>'   # or let DRS balance",
             f"govc vm.change -vm {govc_vm(vm)} -cpu.reservation '<MHz>'   # guarantee CPU if it must not wait"]
    if costop and vcpus != 1:
        steps.append(f"govc vm.change -vm {govc_vm(vm)} -c '<fewer vCPUs>'   # %CSTP high: too many vCPUs")
    return Remediation(
        os="vsphere", title=f"Relieve CPU contention for {vm} before touching the rings",
        commands=tuple(steps),
        disruption="vMotion: none; changing the vCPU count needs the VM powered off (unless CPU hot-add).",
        notes=("First, in esxtop on the VM's host (CPU view), compare this VM's %RDY with the other VMs' and the "
               "host's PCPU UTIL%.",
               "A vCPU that waits to be scheduled cannot drain its rx rings; bigger rings only delay the drops."),
    )


def linux_more_queues(iface: str | None, vcpus: int | None) -> Remediation:
    """Only when the vNIC has fewer rx queues than vCPUs (or either is unknown) and the drops spread over
    its queues: more queues do not split the flows of a few hot queues."""
    dev = sh_arg(iface, "iface")
    return Remediation(
        os="linux", title=f"Rings are at the maximum: spread receive work over {vcpus or 'all'} rx queues",
        commands=(f"ethtool -L {dev} combined {sh_arg(vcpus, 'vCPUs')}", f"ethtool -l {dev}   # verify"),
        notes=("vmxnet3 opens at most one rx queue per vCPU (up to 8 on older drivers); check %RDY/%CSTP.",),
        disruption=DISRUPTION_LINUX,
    )


def vsphere_add_vcpus(vm: str, vcpus: int | None, iface: str | None, guest_os: str | None = "linux",
                      title: str | None = None) -> Remediation:
    """The vNIC already has one rx queue per vCPU: only more vCPUs bring more queues. The guest step is
    in the guest's own language: a Windows guest never gets a Linux command."""
    more = sh_arg(vcpus * 2 if vcpus else None, "more vCPUs")
    if guest_os == "windows":
        name = ps_name(iface) if iface else ps_quote("<adapter>")
        guest_step = (f"then in the guest: Set-NetAdapterRss -Name {name} -NumberOfReceiveQueues "
                      f"{vcpus * 2 if vcpus else '<more vCPUs>'} (Maximum Number of RSS Queues; RSS must be on)")
    else:
        guest_step = (f"then in the guest: ethtool -L {sh_arg(iface, 'iface')} combined {more} (if the driver does "
                      "not follow the vCPU count itself)")
    return Remediation(
        os="vsphere", title=title or f"Rings are at the maximum and every vCPU has an rx queue: add vCPUs to {vm}",
        commands=(f"govc vm.change -vm {govc_vm(vm)} -c {more}",),
        persistence=(guest_step,),
        disruption="Needs the VM powered off unless CPU hot-add is enabled.",
        notes=("Check %CSTP afterwards: more vCPUs than the host can co-schedule trade drops for co-stop.",
               "Or lower the receive load or the CPU contention on this VM."),
    )


def replace_emulated_nic(vm: str, label: str | None, mac: str | None, nic_type: str, network: str | None,
                         guest_os: str | None) -> Remediation:
    """e1000/e1000e -> vmxnet3. Changing the type is a new virtual device for the guest, done powered off;
    the commands keep the MAC (a new MAC breaks DHCP reservations and licences bound to it)."""
    mac_arg = mac_text(mac)
    net = sh_arg(network, "portgroup")
    guest = {"linux": "Linux: the vmxnet3 driver is in-tree; the interface may get a new name (check udev/netplan/"
                      "NetworkManager profiles bound to the old name or driver).",
             "windows": "Windows: install VMware Tools first (it carries the vmxnet3 driver); the new adapter gets a "
                        "fresh IP configuration, the old static settings stay on the hidden e1000 device."}
    return Remediation(
        os="vsphere", title=f"Change {label or 'the adapter'} ({mac or 'MAC unknown'}) from {nic_type} to vmxnet3",
        commands=(f"Get-VM -Name {ps_name(vm)} | Get-NetworkAdapter | Where-Object {{ $_.MacAddress -eq "
                  f"{ps_quote(mac_arg)} }} | Set-NetworkAdapter -Type Vmxnet3 -Confirm:$false",
                  f"govc device.info -vm {govc_vm(vm)} 'ethernet-*'   # find the device with MAC {mac_arg}",
                  f"govc device.remove -vm {govc_vm(vm)} '<ethernet-N>'",
                  f"govc vm.network.add -vm {govc_vm(vm)} -net {net} -net.adapter vmxnet3 -net.address {mac_arg}"),
        persistence=("The adapter type is part of the VM's configuration: it persists.",),
        disruption="Downtime: the VM must be powered off for the change, and the guest sees a new network device "
                   "when it starts.",
        notes=("PowerCLI keeps the device and its MAC; with govc the adapter is removed and re-added with the same "
               "MAC (-net.address). Without keeping it, the vNIC gets a new MAC.",
               guest.get(guest_os or "", "Needs the vmxnet3 driver in the guest (in-tree on Linux, VMware Tools on "
                                         "Windows).")),
    )


RING_OVERFLOW_ERRORS = ("Receive packets dropped", "Receive missed errors", "Receive FIFO errors", "Receive over errors")
WIRE_ERRORS = ("Receive CRC errors", "Receive length errors", "Receive frame errors")


def uplink_loss(vmnic: str, counters: list[str | None]) -> Remediation:
    """Loss on the physical NIC: its own rx ring overflowed (packets dropped, missed, FIFO or over errors: the
    host did not drain it) or the wire (CRC, length, frame errors). Read-only commands first; the pNIC ring
    change only when a ring-overflow counter rose (for the wire's errors it changes nothing). With the counters
    unknown (vCenter's figures alone) the ring is read, not changed: the counters say which it is."""
    nic = sh_arg(vmnic, "vmnic")
    overflow = any(k in RING_OVERFLOW_ERRORS for k in counters)
    wire = any(k in WIRE_ERRORS for k in counters)
    commands = [f"esxcli network nic stats get -n {nic}   # watch the counters rise"]
    if overflow or not wire:
        commands.append(f"esxcli network nic ring preset get -n {nic}; esxcli network nic ring current get -n {nic}")
    if overflow:
        commands.append(f"esxcli network nic ring current set -n {nic} -r '<RX preset maximum>'   # missed / FIFO "
                        "errors: the pNIC's rx ring overflowed")
    notes = ["Every VM whose traffic this uplink carries loses these frames: a vNIC ring change helps none of them.",
             "Check the physical switch port's counters, the NIC driver and firmware (esxcli network nic get -n "
             f"{nic}), and NetQueue/RSS for the uplink."]
    if wire:
        notes.insert(0, "CRC, length or frame errors point at the wire: cable, SFP/transceiver, or the switch port.")
    return Remediation(
        os="esxi", title=f"Find out why {vmnic} loses received frames", commands=tuple(commands),
        disruption="Changing a pNIC ring size resets the uplink: traffic fails over to the team's other uplinks "
                   "for a moment (or stops, with one uplink). Use a change window." if overflow else
                   "None: the commands only read the NIC's counters and settings.",
        notes=tuple(notes))


def align_mtu(guest_os: str | None, iface: str | None, adapter: str | None, mtu: int | None,
              transmit: bool = False) -> Remediation:
    """Frames larger than the vNIC (receive) or the port (transmit) allow: the MTU differs along the path."""
    side = ("the guest sends frames larger than the vSwitch port's MTU" if transmit else
            "frames larger than the guest's MTU arrive")
    if guest_os == "windows":
        name = ps_name(adapter) if adapter else ps_quote("<adapter>")
        commands = (f"Get-NetAdapterAdvancedProperty -Name {name} -RegistryKeyword '*JumboPacket'   # the MTU in use",
                    "esxcli network vswitch standard list   # on the host: the vSwitch MTU (distributed: "
                    "esxcli network vswitch dvs vmware list)")
    else:
        commands = (f"ip link show {sh_arg(iface, 'iface')}   # the guest MTU ({mtu or 'unknown'})",
                    "esxcli network vswitch standard list   # on the host: the vSwitch MTU (distributed: "
                    "esxcli network vswitch dvs vmware list)")
    return Remediation(
        os=guest_os or "any", title=f"Align the MTU along the path ({side})", commands=commands,
        notes=("Use one MTU end to end: the guests, the vSwitch or distributed switch, the physical switches. "
               "A bigger ring does not help frames that do not fit.",))


def vsphere_relieve_memory(vm: str) -> Remediation:
    """The host swaps the VM (%SWPWT, page-absent drops): its vCPUs wait for pages and cannot refill rings."""
    return Remediation(
        os="vsphere", title=f"Stop the host swapping {vm} before touching the rings",
        commands=(f"govc vm.info -r -vm {govc_vm(vm)}   # memory limit, reservation, ballooned and swapped MB",
                  f"govc vm.change -vm {govc_vm(vm)} -mem.reservation '<MB>'   # or remove a memory limit",
                  f"govc vm.migrate -vm {govc_vm(vm)} -host '<host with free memory>'   # or let DRS balance"),
        disruption="A reservation or a vMotion: none for the guest.",
        notes=("In esxtop on the host (memory view, m): this VM's SWCUR and SWR/s, the host's free memory.",
               "A bigger ring costs guest memory this VM does not have, and its vCPUs wait for swapped pages: "
               "raising the ring would not stop the drops."))


def raise_tx_ring(guest_os: str | None, iface: str | None, adapter: str | None) -> Remediation:
    if guest_os == "windows":
        name = ps_name(adapter) if adapter else ps_quote("<adapter>")
        return Remediation(
            os="windows", title=f"Raise Tx Ring Size to 4096 on {adapter or 'the adapter'}",
            commands=(f"Set-NetAdapterAdvancedProperty -Name {name} -RegistryKeyword MaxTxRingLength "
                      "-RegistryValue 4096",),
            persistence=("Advanced properties are stored in the registry and survive reboots.",),
            disruption=DISRUPTION_WINDOWS)
    dev = sh_arg(iface, "iface")
    return Remediation(
        os="linux", title=f"Raise the TX ring to 4096 on {iface or 'the interface'}",
        commands=(f"ethtool -G {dev} tx 4096", f"ethtool -g {dev}   # verify: Current hardware settings TX"),
        persistence=(f"NetworkManager: nmcli connection modify \"$(nmcli -g GENERAL.CONNECTION device show {dev})\" "
                     "ethtool.ring-tx 4096", "ethtool -G alone is lost at the next reboot."),
        disruption=DISRUPTION_LINUX)


# --- NICs outside the vSwitch (SR-IOV VF, DirectPath I/O): the driver's own remedies (esxdiag.rules.driver_nic)
DISRUPTION_DRIVER = ("ethtool -G/-L re-initialise the NIC's queues: expect a brief traffic interruption. Use a "
                     "change window on production VMs.")


def driver_ring_raise(iface: str | None, current: int | None, maximum: int | None) -> tuple[Remediation | None,
                                                                                           list[str]]:
    """The NIC's own receive ring up to the maximum its driver reports (ethtool -g), only when it is below it;
    (None, what to collect) when the sizes are unknown, (None, []) when the ring is at its maximum already."""
    dev = sh_arg(iface, "iface")
    if current is None or maximum is None:
        return None, [f"ethtool -g {dev}: the ring size and the maximum its driver allows (the ring raise is shown "
                      "only below that maximum)"]
    if current >= maximum:
        return None, []
    return Remediation(
        os="linux", title=f"Raise {iface or 'the NIC'}'s receive ring from {current:,} to its driver's maximum "
                          f"{maximum:,}",
        commands=(f"ethtool -G {dev} rx {maximum}", f"ethtool -g {dev}   # verify: Current hardware settings RX"),
        persistence=(f"NetworkManager: nmcli connection modify \"$(nmcli -g GENERAL.CONNECTION device show {dev})\" "
                     f"ethtool.ring-rx {maximum}", "ethtool -G alone is lost at the next reboot."),
        disruption=DISRUPTION_DRIVER,
        notes=("A bigger ring absorbs longer bursts; it costs guest memory (ring entries x buffer size).",)), []


def driver_spread_receive(iface: str | None, vcpus: int | None, driver: str | None = None) -> Remediation:
    """Read-only checks first: whether the NIC's channels and interrupts use every vCPU. Some drivers name
    their IRQs after themselves (mlx5_comp0@pci:...), not the interface."""
    dev = sh_arg(iface, "iface")
    stem = driver.split("_")[0] if driver else None  # mlx5_core's IRQs are mlx5_comp<N>@pci:...
    irq_names = "|".join(re.escape(n) for n in (iface, stem) if n) or "<iface>"
    count = vcpus or "the VM's vCPU count"
    return Remediation(
        os="linux", title=f"Check that {iface or 'the NIC'}'s receive work is spread over the vCPUs",
        commands=(f"ethtool -l {dev}   # combined channels: current and maximum",
                  f"grep -E {shlex.quote(irq_names)} /proc/interrupts   # one IRQ per channel, on which vCPU"),
        notes=(f"With fewer combined channels than vCPUs ({count}) and below the maximum "
               f"ethtool -l shows: ethtool -L {dev} combined <N>. Channels whose IRQs share one vCPU: pin them "
               "apart (irqbalance, or /proc/irq/<irq>/smp_affinity_list).",),
        disruption="The checks change nothing; ethtool -L re-initialises the NIC's queues.")


def guest_memory_for_receive(iface: str | None) -> Remediation:
    return Remediation(
        os="linux", title=f"The guest could not allocate receive buffers for {iface or 'the NIC'}: check its memory",
        commands=("grep -E 'MemAvailable|MemFree' /proc/meminfo", "sysctl vm.min_free_kbytes"),
        notes=("Buffer allocation fails when the guest is short of free (atomic) memory: more guest memory, or a "
               "higher vm.min_free_kbytes, helps; a bigger ring would need more of the memory that is missing.",))


def physical_port_drops(iface: str | None, attachment: str | None) -> Remediation:
    """An SR-IOV VF's port belongs to its PF, which ESXi owns (a vmnic); a DirectPath NIC's port is the guest's."""
    notes = ("The frames were dropped at the physical port before the guest saw them: nothing in the guest's "
             "receive path changes it. Look at the port's congestion (its receive buffer, flow control / PFC with "
             "the physical switch) and, for a VF, at the other VFs sharing the port.",)
    if attachment == "sriov":
        return Remediation(
            os="vsphere", title=f"Receive drops at the physical port of {iface or 'the VF'}'s PF: on the host and "
                                "the switch",
            commands=("esxcli network sriovnic list", "esxcli network nic stats get -n <vmnic of the PF>"),
            notes=notes)
    dev = sh_arg(iface, "iface")
    return Remediation(
        os="linux", title=f"Receive drops at the physical port of {iface or 'the NIC'}: the port and the switch",
        commands=(f"ethtool -a {dev}   # pause (flow control) settings", f"ethtool -S {dev} | grep -E 'prio|pause'"),
        notes=notes)
