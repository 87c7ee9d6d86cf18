"""Issue 33 item 8: rename advice converges. Every kind of "rename it to ..." the intake of a loose
folder can print is followed literally here (a placeholder in capitals replaced by the value it
names: an interface, a vmnic, a World ID, a port), and the next run places the renamed file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from esxdiag.intake.folder import infer
from esxdiag.intake.found import Questions

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-by-hand" / "iperf-test1"
DRIVER = FIX / "guest" / "seed002_ethtool_i_eth0.txt"
STATS = [SEED / "guest-iperf-test1" / f"ethtool_stats@iface=eth0.s{n}.txt" for n in (0, 1)]
IP_LINK_TWO = ("1: lo: <LOOPBACK,UP> mtu 65536 qdisc noqueue state UNKNOWN\\    link/loopback 00:00:00:00:00:00\n"
               "2: eth0: <BROADCAST,UP> mtu 1500 qdisc mq state UP\\    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff\n"
               "3: eth1: <BROADCAST,UP> mtu 1500 qdisc mq state UP\\    link/ether 00:50:56:a6:77:01 brd ff:ff:ff:ff:ff:ff\n")
FILL = {"WORLDID": "2178744", "vmnicN": "vmnic1", "PORT": "33554464"}


def _asked(folder: Path) -> list[str]:
    try:
        infer(folder, folder / ".work")
    except Questions as exc:
        return exc.asked
    return []


def _captures(folder: Path) -> dict[str, dict]:
    return {c["file"]: c for c in infer(folder, folder / ".work").manifest["captures"]}


def _follow(folder: Path, question: str) -> None:
    """Do literally what one question says: its first "rename it to", or its "a -> b" renames."""
    if "rename it to " in question:
        target = question.split("rename it to ", 1)[1].split(" or ")[0].split(" (")[0]
        moves = [(question.split(":")[0], target)]
    else:
        moves = [tuple(pair.split(" -> ")) for pair in question.split("e.g. ", 1)[1].split(", ")]
    for old, new in moves:
        for placeholder, value in FILL.items():
            new = new.replace(placeholder, value)
        (folder / old).rename(folder / new)


def _converges(folder: Path) -> dict[str, dict]:
    """Follow every question until none is left (at most twice: a port may need its portset too)."""
    for _ in range(3):
        asked = _asked(folder)
        if not asked:
            return _captures(folder)
        for question in asked:
            _follow(folder, question)
    raise AssertionError(f"still asked after following the advice: {_asked(folder)}")


def test_an_ethtool_i_named_for_its_interface_is_read_without_an_ip_link(tmp_path):
    shutil.copy(DRIVER, tmp_path / "ethtool-i-eth0.txt")  # the file: no question at all
    assert _captures(tmp_path)["ethtool-i-eth0.txt"]["params"] == {"iface": "eth0"}


@pytest.mark.parametrize("name", ["driver.txt", "ethtool-i-eth0-vs-eth1.txt", "ethtool_-i_ens192_enp3s0.txt"])
def test_an_interface_question_without_an_ip_link_converges(tmp_path, name):
    shutil.copy(DRIVER, tmp_path / name)
    (question,) = _asked(tmp_path)
    assert "no ip -o link in the folder" in question
    captures = _converges(tmp_path)
    (capture,) = [c for c in captures.values() if c["spec"] == "ethtool_driver"]
    assert capture["params"] == {"iface": "eth0"}


@pytest.mark.parametrize("name", ["ethtool-i.txt", "ethtool-i-eth0-eth1.txt"])
def test_an_interface_question_with_two_known_interfaces_converges(tmp_path, name):
    (tmp_path / "ip-o-link.txt").write_text(IP_LINK_TWO)
    shutil.copy(DRIVER, tmp_path / name)
    (question,) = _asked(tmp_path)
    assert "the guest has eth0, eth1" in question
    captures = _converges(tmp_path)
    assert [c["params"] for c in captures.values() if c["spec"] == "ethtool_driver"] == [{"iface": "eth0"}]


def test_an_uplink_question_converges_even_when_the_name_says_two_vmnics(tmp_path):
    (tmp_path / "nic-stats-vmnic0-vmnic1.txt").write_text("NIC statistics for vmnic1\n" + "cut by a pager\n" * 30)
    (question,) = _asked(tmp_path)
    assert "which uplink's counters" in question
    captures = _converges(tmp_path)
    assert [c["params"] for c in captures.values() if c["spec"] == "esxcli_nic_stats"] == [{"vmnic": "vmnic1"}]


@pytest.mark.parametrize("with_list", [True, False])
def test_a_world_question_converges(tmp_path, with_list):
    if with_list:
        shutil.copy(FIX / "host" / "esxcli_vm_list_rayd62.txt", tmp_path / "vm-list.txt")
    shutil.copy(FIX / "host" / "esxcli_vm_port_list_rayd62_2178744.txt", tmp_path / "ports-20231128-1.txt")
    (question,) = _asked(tmp_path)
    assert "which VM's port list" in question
    captures = _converges(tmp_path)
    (ports,) = [c for c in captures.values() if c["spec"] == "esxcli_vm_ports"]
    listed = (FIX / "host" / "esxcli_vm_list_rayd62.txt").read_text()
    assert ports["params"]["world"] in (listed if with_list else FILL["WORLDID"])


@pytest.mark.parametrize("names", [("stats a.txt", "stats b.txt"), ("first eth0 t5.txt", "copy eth0 t5.txt"),
                                   ("x.txt", "y.txt", "z.txt")])
def test_a_sample_order_question_converges(tmp_path, names):
    for name, source in zip(names, STATS + STATS[:1]):
        shutil.copy(source, tmp_path / name)
        os.utime(tmp_path / name, (1_500_000_000, 1_500_000_000))
    (tmp_path / "ip-o-link.txt").write_text(IP_LINK_TWO.splitlines()[1] + "\n")
    asked = _asked(tmp_path)
    assert any("which ethtool-stats capture was taken first" in q for q in asked), asked
    captures = _converges(tmp_path)
    samples = sorted(c["sample"] for c in captures.values() if c["spec"] == "ethtool_stats")
    assert samples == list(range(len(names)))


def test_a_port_question_without_net_stats_converges(tmp_path):
    shutil.copy(SEED / "esxi-esx0" / "vsish_rxsummary@port=33554464,portset=vSwitch0.s0.txt", tmp_path / "rx.txt")
    (question,) = _asked(tmp_path)
    assert "no net-stats -l in the folder" in question
    captures = _converges(tmp_path)
    (rx,) = [c for c in captures.values() if c["spec"] == "vsish_rxsummary"]
    assert rx["params"] == {"portset": "vSwitch0", "port": "33554464"}
