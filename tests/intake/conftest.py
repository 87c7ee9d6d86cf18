from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed-by-hand" / "iperf-test1"
HOST, GUEST = SEED / "esxi-esx0", SEED / "guest-iperf-test1"
PORT = "port=33554464,portset=vSwitch0"

# the seed's outputs under the names a person would give them
NATURAL = {
    "net-stats-l.txt": HOST / "net_stats_list.txt",
    "vmware-vl.txt": HOST / "esxi_version.txt",
    "esxtop.csv": HOST / "esxtop_batch@delay=5,iterations=13.txt",
    "rxSummary-before.txt": HOST / f"vsish_rxsummary@{PORT}.s0.txt",
    "rxSummary-after.txt": HOST / f"vsish_rxsummary@{PORT}.s1.txt",
    "clientStats-before.txt": HOST / f"vsish_clientstats@{PORT}.s0.txt",
    "clientStats-after.txt": HOST / f"vsish_clientstats@{PORT}.s1.txt",
    "rxqueues-ls.txt": HOST / f"vsish_rxqueues@{PORT}.txt",
    "rxqueue0-status.txt": HOST / f"vsish_rxqueue_status@{PORT},queue=0.txt",
    "rxqueue1-status.txt": HOST / f"vsish_rxqueue_status@{PORT},queue=1.txt",
    "ethtool-S-before.txt": GUEST / "ethtool_stats@iface=eth0.s0.txt",
    "ethtool-S-after.txt": GUEST / "ethtool_stats@iface=eth0.s1.txt",
    "ethtool-g.txt": GUEST / "ethtool_rings@iface=eth0.txt",
    "ethtool-i.txt": GUEST / "ethtool_driver@iface=eth0.txt",
    "ethtool-P.txt": GUEST / "ethtool_permaddr@iface=eth0.txt",
    "ip-o-link.txt": GUEST / "ip_link.txt",
    "nproc.txt": GUEST / "nproc.txt",
    "netstat-s-before.txt": GUEST / "netstat_s.s0.txt",
    "netstat-s-after.txt": GUEST / "netstat_s.s1.txt",
}


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "esxdiag", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def analyze_json(source) -> dict:
    proc = run_cli("analyze", source, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def seed_folder(tmp_path) -> Path:
    folder = tmp_path / "captures"
    folder.mkdir()
    for name, source in NATURAL.items():
        shutil.copy(source, folder / name)
    return folder


def vnic(doc: dict, vm: str) -> dict:
    return next(v for v in doc["vms"] if v["name"] == vm)["vnics"][0]


@pytest.fixture
def kit():
    """The helpers above for the test modules (--import-mode=importlib: conftest is not importable)."""
    import types

    return types.SimpleNamespace(ROOT=ROOT, SEED=SEED, HOST=HOST, GUEST=GUEST, NATURAL=NATURAL, run=run_cli,
                                 analyze=analyze_json, vnic=vnic, sosreport=make_sosreport, tarball=make_tarball)


def make_sosreport(parent: Path, name: str, sample: int, date: str) -> Path:
    """A sosreport tree as `sos report` lays it out (networking plugin file names), from the seed guest."""
    top = parent / name
    net = top / "sos_commands" / "networking"
    net.mkdir(parents=True)
    shutil.copy(GUEST / f"ethtool_stats@iface=eth0.s{sample}.txt", net / "ethtool_-S_eth0")
    shutil.copy(GUEST / "ethtool_rings@iface=eth0.txt", net / "ethtool_-g_eth0")
    shutil.copy(GUEST / "ethtool_driver@iface=eth0.txt", net / "ethtool_-i_eth0")
    shutil.copy(GUEST / "ethtool_permaddr@iface=eth0.txt", net / "ethtool_-P_eth0")
    shutil.copy(GUEST / f"netstat_s.s{sample}.txt", net / "netstat_-s")
    (net / "ip_-s_-d_link").write_text(
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\n"
        "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00 promiscuity 0 minmtu 0 maxmtu 0\n"
        "    RX:  bytes packets errors dropped  missed   mcast\n         1000      10      0       0       0       0\n"
        "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000\n"
        "    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 60 maxmtu 9000\n"
        "    RX:  bytes packets errors dropped  missed   mcast\n    1670920359206 50714621 0 0 0 0\n"
        "    altname enp3s0\n")
    (net / "ethtool_eth0").write_text("Settings for eth0:\n\tSpeed: 10000Mb/s\n")
    (top / "proc").mkdir()
    (top / "proc" / "cpuinfo").write_text("".join(f"processor\t: {n}\nvendor_id\t: GenuineIntel\n\n" for n in range(2)))
    nm = top / "etc" / "NetworkManager" / "system-connections"
    nm.mkdir(parents=True)
    (nm / "eth0.nmconnection").write_text("[connection]\nid=eth0\n[ethtool]\nring-rx=256\n")
    (top / "hostname").write_text("iperf-test1.lab.local\n")
    (top / "sos_commands" / "date").mkdir()
    (top / "sos_commands" / "date" / "date").write_text(date + "\n")
    return top


def make_tarball(tree: Path, out: Path) -> Path:
    import tarfile

    with tarfile.open(out, "w:xz" if out.name.endswith("xz") else "w:gz") as tar:
        tar.add(tree, arcname=tree.name)
    return out
