"""Generate a realistic esxtop batch CSV (``esxtop -b -a``) for the parser benchmark.

Layout follows docs/raw-formats.md §1: every field quoted, field 0 ``(PDH-CSV 4.0) (UTC)(0)``,
counter paths ``\\\\host\\Object(Instance)\\Counter``; per VM a ``Group Cpu``, one ``Vcpu`` per world
(vmx, vmast, vthread, mks, svga, vmx-vcpu-N), ``Group Memory``, two ``Network Port`` vNICs and
three ``Virtual Disk`` instances; plus host-level Physical Cpu, Memory and uplink ports. VM names
include spaces, commas, parentheses and non-ASCII letters. The bench VM ``iperf-test1`` (1 vCPU,
CPU limit; in the middle of the VM list) carries the seed's figures (%RDY 69.60, %MLMTD 69.52).

    python bench/esxtop_gen.py [--out bench/out/esxtop_300mb.csv] [--size-mb 300] [--vms 72]
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

HOST = "esx-bench-01.lab.example.com"
CPU_COUNTERS = ["% Used", "% Run", "% System", "% Wait", "% VmWait", "% Ready", "% Idle", "% Overlap",
                "% CoStop", "% Max Limited", "% Swap Wait", "Switches/sec", "Migrates/sec",
                "Quantum Expires/sec", "Wakeups/sec", "Timers/sec"]
GROUP_CPU_COUNTERS = ["Members"] + CPU_COUNTERS + ["% CPU Latency", "% Demand", "Power Usage Watts"]
GROUP_MEMORY_COUNTERS = ["Members", "Memory Size MBytes", "Memory Shares", "Memory Reservation MBytes",
                         "Memory Limit MBytes", "Memory Granted MBytes", "Memory Consumed MBytes",
                         "Memory Target MBytes", "Touched MBytes", "Active Estimate MBytes",
                         "Memory Ballooned MBytes", "Memory Swapped MBytes", "Swap Read MBytes/sec",
                         "Swap Written MBytes/sec", "Zipped MBytes", "Memory Overhead MBytes",
                         "Shared MBytes", "Copy-On-Write Hint MBytes", "Numa Remote MBytes",
                         "Numa Local MBytes"]
PORT_COUNTERS = ["Packets Transmitted/sec", "MBits Transmitted/sec", "Packets Received/sec",
                 "MBits Received/sec", "% Outbound Packets Dropped", "% Received Packets Dropped",
                 "Multicast Packets Transmitted/sec", "Multicast Packets Received/sec",
                 "Broadcast Packets Transmitted/sec", "Broadcast Packets Received/sec"]
DISK_COUNTERS = ["Commands/sec", "Reads/sec", "Writes/sec", "MBytes Read/sec", "MBytes Written/sec",
                 "Average MilliSec/Read", "Average MilliSec/Write"]
ODD_NAMES = ["SQL02 (df09cdf2-1e74-45fb-9ccc-90d1c402fc6b)", "web, frontend", "Müller-DB", "a:b (c)"]
BENCH_VM = "iperf-test1"
BENCH_GID = 5572767
SEED_FIGURES = {"% Ready": "69.60", "% Max Limited": "69.52", "% Used": "37.77", "% Run": "29.20",
                "% CoStop": "0.00", "% Swap Wait": "0.00", "Members": "6"}


def vm_columns(gid: int, name: str, vcpus: int, port_base: int) -> dict[str, list[str]]:
    """One VM's columns by object; esxtop writes each object's instances together (all Group Cpu
    columns, then all Vcpu columns, ...), so a VM's counters are spread across the row."""
    worlds = ["vmx", f"vmast.{gid + 1}", f"vmx-vthread-5:{name}", f"vmx-mks:{name}", f"vmx-svga:{name}"]
    worlds += [f"vmx-vcpu-{n}:{name}" for n in range(vcpus)]
    return {
        "Group Cpu": [f"Group Cpu({gid}:{name})\\{c}" for c in GROUP_CPU_COUNTERS],
        "Vcpu": [f"Vcpu({gid}:{name}:{gid + offset}:{world})\\{c}"
                 for offset, world in enumerate(worlds) for c in CPU_COUNTERS],
        "Group Memory": [f"Group Memory({gid}:{name})\\{c}" for c in GROUP_MEMORY_COUNTERS],
        "Virtual Disk": [f"Virtual Disk({disk})\\{c}"
                         for disk in (name, f"{name}:scsi0:0", f"{name}:scsi0:1") for c in DISK_COUNTERS],
        "Network Port": [f"Network Port(DvsPortset-0:{port_base + nic}:{gid}:{name})\\{c}"
                         for nic in range(2) for c in PORT_COUNTERS],
    }


def vm_name(index: int, vm_count: int) -> str:
    if index == vm_count // 2:
        return BENCH_VM
    if index % 9 == 0:
        return f"{ODD_NAMES[index // 9 % len(ODD_NAMES)]} {index}"
    return f"vm-{index:03d}"


def header_columns(vm_count: int) -> list[str]:
    sections: dict[str, list[str]] = {
        "Memory": [f"Memory\\Memory Overcommit ({n} Minute Avg)" for n in (1, 5, 15)],
        "Physical Cpu": [f"Physical Cpu({n})\\{c}" for c in ("% Processor Time", "% Util Time", "% Core Util Time")
                         for n in [*range(64), "_Total"]],
        "Group Cpu": [f"Group Cpu({gid}:{name})\\{c}" for gid, name in
                      ((1, "system"), (2, "helper"), (3, "drivers"), (4, "ft"), (5, "vmotion"), (2099013, "hostd.2099013"))
                      for c in GROUP_CPU_COUNTERS],
        "Vcpu": [], "Group Memory": [], "Virtual Disk": [],
        "Network Port": [f"Network Port(DvsPortset-0:{2214592518 + n}:vmnic{n})\\{c}" for n in range(4)
                         for c in PORT_COUNTERS],
    }
    for index in range(vm_count):
        vcpus = 1 if index == vm_count // 2 else (1, 2, 4, 8)[index % 4]
        for obj, columns in vm_columns(BENCH_GID - (vm_count // 2 - index) * 100, vm_name(index, vm_count),
                                       vcpus, 67108900 + index * 2).items():
            sections[obj] += columns
    return [f"\\\\{HOST}\\{c}" for columns in sections.values() for c in columns]


def value_for(column: str, rng: random.Random) -> str:
    if f"({BENCH_GID}:{BENCH_VM})\\" in column:
        counter = column.rsplit("\\", 1)[1]
        if counter in SEED_FIGURES:
            return SEED_FIGURES[counter]
    if column.endswith("\\Members"):
        return str(rng.randint(5, 13))
    if rng.random() < 0.55:
        return "0.00"
    return f"{rng.uniform(0, 400 if '%' in column else 20000):.2f}"


def write(out: Path, size_mb: float, vm_count: int, seed: int = 7, pool_size: int = 48,
          rows: int | None = None) -> tuple[int, int]:
    """Write the CSV; ``rows`` overrides the row count derived from ``size_mb``."""
    rng = random.Random(seed)
    columns = header_columns(vm_count)
    pool = [",".join(f'"{value_for(c, rng)}"' for c in columns) for _ in range(pool_size)]
    row_bytes = sum(len(p.encode()) for p in pool) / pool_size + 25
    rows = rows or max(1, int(size_mb * 1e6 / row_bytes))
    start = datetime(2024, 5, 14, 9, 0, 0)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(",".join(['"(PDH-CSV 4.0) (UTC)(0)"'] + [f'"{c}"' for c in columns]) + "\n")
        for index in range(rows):
            stamp = (start + timedelta(seconds=5 * index)).strftime("%m/%d/%Y %H:%M:%S")
            handle.write(f'"{stamp}",{pool[index % pool_size]}\n')
    return len(columns) + 1, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "esxtop_300mb.csv")
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--vms", type=int, default=72)
    args = parser.parse_args()
    columns, rows = write(args.out, args.size_mb, args.vms)
    print(f"{args.out}: {columns} columns x {rows} rows, {args.out.stat().st_size / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
