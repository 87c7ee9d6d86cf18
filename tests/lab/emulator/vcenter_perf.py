"""What the lab's vCenter reports for a scenario VM or host: its performance counters, from model.py.

The emulated ESXi host (esxi_out.py) prints cumulative counters that advance at the scenario's
``rates_per_s`` and esxtop percentages from the scenario's ``cpu``; vCenter's realtime statistics
are the same quantities summed per sample interval (20 s), so both come from one model:

* ``net.droppedRx.summation``: the host port's droppedRx (clientStats, "running out of buffers")
  gained over the sample; ``net.packetsRx.summation``: pktsRxOK ("pkts rx ok");
  ``net.packetsTx.summation``: pktsTxOK (the guest's TCP segments sent); ``net.droppedTx``: 0.
  Instances: the vNIC's device key, and "" (the sum over the VM's vNICs).
* ``cpu.ready/costop/maxlimited.summation``: milliseconds per sample per vCPU = scenario
  percentage x interval_s x 10 (20 s: pct x 200, docs/diagnosis.md §4); instances "0".."n-1", and ""
  (the sum over vCPUs, as vCenter sums them). ``cpu.usage.average``: hundredths of a percent.

For a scenario host (``host_value``), from the counters its ``esxcli network nic stats get -n
vmnicN`` prints (scenarios.json hosts[].uplinks):

* ``net.droppedRx.summation``: "Receive packets dropped" + "Receive missed errors" gained over the
  sample (frames the host counted as lost on receive); ``net.errorsRx.summation``: "Total receive
  errors" gained. Instances: "vmnicN" per uplink, and "" (the sum over the host's uplinks).
* ``cpu.usage.average``: the host's ``cpu_used_pct`` (esxtop Physical Cpu(_Total) % Processor
  Time) in hundredths of a percent; instance "" only (the model has no per-pCPU figures).

A sample stamped ``end`` covers (end - interval, end]. Times are seconds since the lab started and
may be negative: the scenario is a steady state, so vCenter's history before the lab started shows
the same rates. An e1000 vNIC without counters reports zeros, as its clientStats does.
"""

from __future__ import annotations

from model import counter, tcp_counter, uplink_counter

NET_COUNTERS = ("net.droppedRx.summation", "net.droppedTx.summation",
                "net.packetsRx.summation", "net.packetsTx.summation")
CPU_COUNTERS = ("cpu.ready.summation", "cpu.costop.summation", "cpu.maxlimited.summation", "cpu.usage.average")
COUNTERS = NET_COUNTERS + CPU_COUNTERS
_CPU_FIELD = {"cpu.ready.summation": "ready_pct", "cpu.costop.summation": "costop_pct",
              "cpu.maxlimited.summation": "max_limited_pct", "cpu.usage.average": "used_pct"}
_HOST_COUNTER = {"net.droppedRx.summation": "running out of buffers", "net.packetsRx.summation": "pkts rx ok"}


def instances(vm: dict, device_keys: list[int], name: str) -> list[str]:
    """What a real vCenter expands instance "*" to: the aggregate "" then one per vCPU / vNIC."""
    if name in NET_COUNTERS:
        return [""] + [str(key) for key in device_keys]
    if name == "cpu.usage.average":
        return [""]
    return [""] + [str(i) for i in range(vm["num_cpu"])]


def _nic_gain(vm: dict, nic: dict, name: str, t0: float, t1: float) -> int:
    if name == "net.packetsTx.summation":
        return tcp_counter(vm, "segments_sent", t1) - tcp_counter(vm, "segments_sent", t0)
    if name == "net.droppedTx.summation" or "counters_start" not in nic:
        return 0
    return counter(nic, _HOST_COUNTER[name], t1) - counter(nic, _HOST_COUNTER[name], t0)


def value(vm: dict, device_keys: list[int], name: str, instance: str, end: float, interval_s: int) -> int | None:
    """The sample of ``name`` for ``instance`` ending ``end`` seconds after the lab started; None
    when the VM has no such instance (a real vCenter returns no series for it)."""
    if name in NET_COUNTERS:
        nics = {str(key): nic for key, nic in zip(device_keys, vm["nics"])}
        chosen = list(nics.values()) if instance == "" else [nics[instance]] if instance in nics else []
        if not chosen:
            return None
        return sum(_nic_gain(vm, nic, name, end - interval_s, end) for nic in chosen)
    if name not in _CPU_FIELD:
        return None
    pct = vm["cpu"][_CPU_FIELD[name]]
    if name == "cpu.usage.average":
        return round(pct * 100) if instance == "" else None
    vcpus = vm["num_cpu"]
    if instance != "" and instance not in {str(i) for i in range(vcpus)}:
        return None
    per_vcpu = round(pct * interval_s * 10)
    return per_vcpu * vcpus if instance == "" else per_vcpu


HOST_NET = {"net.droppedRx.summation": ("Receive packets dropped", "Receive missed errors"),
            "net.errorsRx.summation": ("Total receive errors",)}  # vCenter counter -> esxcli nic stats keys
HOST_COUNTERS = tuple(HOST_NET) + ("cpu.usage.average",)


def host_instances(host: dict, name: str) -> list[str]:
    """What a real vCenter expands instance "*" to for a host: the aggregate "" then one per vmnic."""
    if name in HOST_NET:
        return [""] + [uplink["client"] for uplink in host["uplinks"]]
    return [""]


def _uplink_gain(uplink: dict, keys: tuple[str, ...], t0: float, t1: float) -> int:
    return sum(uplink_counter(uplink, key, t1) - uplink_counter(uplink, key, t0) for key in keys)


def host_value(host: dict, name: str, instance: str, end: float, interval_s: int) -> int | None:
    """The sample of ``name`` for the host's ``instance`` ending ``end`` seconds after the lab started;
    None for a counter the model does not know or an instance the host does not have."""
    if name in HOST_NET:
        uplinks = {uplink["client"]: uplink for uplink in host["uplinks"]}
        chosen = list(uplinks.values()) if instance == "" else [uplinks[instance]] if instance in uplinks else []
        if not chosen:
            return None
        return sum(_uplink_gain(uplink, HOST_NET[name], end - interval_s, end) for uplink in chosen)
    if name == "cpu.usage.average" and instance == "":
        return round(host["cpu_used_pct"] * 100)
    return None
