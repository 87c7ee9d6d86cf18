"""Benchmark: one VM's inventory from a 1,000-VM vcsim, esxdiag's collector vs a naive walk.

    python bench/vsphere_bench.py [--vms 1000] [--delay-ms 20] [--rounds 3]

1. esxdiag: find_vm + collect_inventory (ContainerView + RetrievePropertiesEx, explicit paths).
2. naive: the usual pyvmomi walk of the same data (iterate the view reading every vm.name, then
   vm.config.hardware..., vm.runtime.host.name, a loop over vm.config.hardware.device, ...),
   where every attribute hop is one round trip.

SOAP requests are counted by the session's wrapped InvokeMethod for both. Two vcsim runs:
the model built once from vcsim's flags, saved with `govc object.save` under .lab/ and loaded
with `vcsim -load` (fast start, but vcsim 0.46.3 only arms -delay/-method-delay at the end of
Model.Create, so a loaded model runs without added latency); then the same model from flags with
`-delay <ms>` (latency added to every method). Not a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import time
from pathlib import Path

from pyVmomi import vim

from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.vsphere import collect_inventory, connect, find_vm

REPO = Path(__file__).resolve().parents[1]
LAB_FILE = REPO / "tests" / "lab" / "vcsim_lab.py"


def _lab_module():
    spec = importlib.util.spec_from_file_location("esxdiag_bench_vcsim_lab", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def saved_model(lab_module, vms: int) -> Path:
    """A vcsim model with `vms` VMs on 4 hosts, saved once under .lab/ and reused."""
    model = REPO / ".lab" / f"bench-{vms}vm" / "model"
    done = model / "saved.ok"  # written only after object.save finished
    if done.exists():
        return model
    started = time.monotonic()
    lab = lab_module.start_vcsim(model.parent / "build", ("-cluster", "1", "-host", "4", "-standalone-host", "0",
                                                           "-vm", str(vms)), timeout_s=600)
    try:
        shutil.rmtree(model, ignore_errors=True)  # govc creates it; a half-saved one is redone
        lab.govc("object.save", "-d", str(model), timeout_s=600)
        (model / "saved.ok").write_text(f"{vms} VMs\n")
    finally:
        lab.stop()
    print(f"built and saved the {vms}-VM model in {time.monotonic() - started:.1f} s -> {model}")
    return model


def naive_inventory(si, name: str) -> dict:
    """What a first pyvmomi script does: attribute walks, one round trip per hop."""
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    matches = [v for v in view.view if v.name == name]  # every name read: ambiguity is checked too
    view.DestroyView()
    (vm,) = matches
    host = vm.runtime.host
    nics = []
    for dev in vm.config.hardware.device:
        if isinstance(dev, vim.vm.device.VirtualEthernetCard):
            backing = dev.backing
            if isinstance(backing, vim.vm.device.VirtualEthernetCard.DistributedVirtualPortBackingInfo):
                pg = next(n for n in vm.network if isinstance(n, vim.dvs.DistributedVirtualPortgroup)
                          and n.key == backing.port.portgroupKey)
                network = pg.name
            else:
                network = backing.network.name
            nics.append({"mac": dev.macAddress.lower(), "device_key": dev.key, "network": network})
    return {
        "name": vm.name, "moid": vm._moId, "instance_uuid": vm.config.instanceUuid,
        "power_state": str(vm.runtime.powerState), "host": host.name,
        "host_cpu_mhz": host.summary.hardware.cpuMhz, "cluster": host.parent.name,
        "num_cpu": vm.config.hardware.numCPU, "cores_per_socket": vm.config.hardware.numCoresPerSocket,
        "memory_mb": vm.config.hardware.memoryMB, "limit": vm.config.cpuAllocation.limit,
        "guest_id": vm.guest.guestId, "hostname": vm.guest.hostName, "ip_address": vm.guest.ipAddress,
        "guest_macs": [n.macAddress for n in vm.guest.net], "vnics": nics,
    }


def measure(session, work) -> tuple[int, float, object]:
    before, started = session.request_count, time.perf_counter()
    result = work()
    return session.request_count - before, time.perf_counter() - started, result


def run(lab, label: str, rounds: int) -> list[str]:
    creds = resolve_credentials(lab.url, lab.username, env={"ESXDIAG_PASSWORD": lab.password},
                                config_path="/dev/null", thumbprint=lab.thumbprint)
    session = connect(creds, timeout_s=120)
    try:
        names = lab.govc("find", "/", "-type", "m").split()
        target = names[len(names) // 2].rsplit("/", 1)[-1]
        rows: dict[str, list[tuple[int, float]]] = {"esxdiag": [], "naive": []}
        for _ in range(rounds):
            requests, seconds, ours = measure(session, lambda: collect_inventory(session, find_vm(session, target)))
            rows["esxdiag"].append((requests, seconds))
            requests, seconds, theirs = measure(session, lambda: naive_inventory(session.si, target))
            rows["naive"].append((requests, seconds))
            assert [n["mac"] for n in ours["vnics"]] == [n["mac"] for n in theirs["vnics"]]
            assert (ours["host"], ours["num_cpu"], ours["cluster"]) == (theirs["host"], theirs["num_cpu"], theirs["cluster"])
    finally:
        session.close()
    lines = [f"{label}: {len(names)} VMs, target {target}, median of {rounds}"]
    for method, samples in rows.items():
        lines.append(f"  {method:<8} {samples[0][0]:>6} requests {statistics.median(s for _, s in samples):>8.2f} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    ns = parser.parse_args(argv)
    lab_module = _lab_module()
    base = REPO / ".lab" / f"bench-{ns.vms}vm"
    report = []
    model = saved_model(lab_module, ns.vms)
    started = time.monotonic()
    lab = lab_module.start_vcsim(base / "load", (), load=model, timeout_s=300)
    report.append(f"vcsim -load (saved model, up in {time.monotonic() - started:.1f} s; vcsim ignores -delay with -load)")
    try:
        report += run(lab, "  no added latency", ns.rounds)
    finally:
        lab.stop()
    started = time.monotonic()
    lab = lab_module.start_vcsim(base / "delay", ("-cluster", "1", "-host", "4", "-standalone-host", "0",
                                                 "-vm", str(ns.vms), "-delay", str(ns.delay_ms)), timeout_s=600)
    report.append(f"vcsim -vm {ns.vms} -delay {ns.delay_ms} (built from flags in {time.monotonic() - started:.1f} s)")
    try:
        report += run(lab, f"  {ns.delay_ms} ms per method", ns.rounds)
    finally:
        lab.stop()
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
