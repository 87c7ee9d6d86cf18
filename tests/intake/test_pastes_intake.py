"""Issue 33 in a loose folder: pasted captures are recognised by their content (prompts around them
included), an ethtool -g is tied to the interface it prints, and the kinds the analysis does not join
(the esxtop network screen, vCenter events as text) say what they hold in the unused-file list."""

from __future__ import annotations

import shutil
from pathlib import Path

from esxdiag.intake.folder import infer
from esxdiag.parsers import PARSERS

FIX = Path(__file__).resolve().parents[1] / "fixtures"
PASTES = FIX / "pastes"
IP_LINK_TWO = ("1: lo: <LOOPBACK,UP> mtu 65536 qdisc noqueue state UNKNOWN\\    link/loopback 00:00:00:00:00:00\n"
               "2: eth0: <BROADCAST,UP> mtu 1500 qdisc mq state UP\\    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff\n"
               "3: ens4: <BROADCAST,UP> mtu 1500 qdisc mq state UP\\    link/ether 00:50:56:a6:77:01 brd ff:ff:ff:ff:ff:ff\n")


def test_an_ethtool_g_pasted_with_its_prompt_is_tied_to_the_interface_it_prints(tmp_path):
    (tmp_path / "ip-o-link.txt").write_text(IP_LINK_TWO)
    rings = PARSERS["ethtool-rings"].sample.replace("eth0", "ens4")
    (tmp_path / "rings.txt").write_text(f"user@guest:~$ sudo ethtool -g ens4\n{rings}user@guest:~$ \n")
    captures = {c["file"]: c for c in infer(tmp_path, tmp_path / ".work").manifest["captures"]}
    assert captures["rings.txt"]["spec"] == "ethtool_rings" and captures["rings.txt"]["params"] == {"iface": "ens4"}


def test_pasted_screens_and_events_are_recognised_and_say_what_they_hold(tmp_path):
    for name in ("esxtop_net_panel_vmnic_binding_blog.txt", "esxtop_net_panel_pktcap_blog_cut_header.txt",
                 "get_vievent_fl_vm_migrated.txt", "govc_events_l_vcsim_vm_migrate.txt"):
        shutil.copy(PASTES / name, tmp_path / name)
    shutil.copy(FIX / "guest" / "seed002_ethtool_i_eth0.txt", tmp_path / "ethtool-i-eth0.txt")
    unused = {u["file"]: u["why"] for u in infer(tmp_path, tmp_path / ".work").manifest["unused_files"]}
    assert unused["esxtop_net_panel_vmnic_binding_blog.txt"].startswith("esxtop-net-panel output is not used")
    assert "no port shows %DRPRX above 0" in unused["esxtop_net_panel_vmnic_binding_blog.txt"]
    assert "no %DRPRX column in the paste" in unused["esxtop_net_panel_pktcap_blog_cut_header.txt"]
    events = unused["get_vievent_fl_vm_migrated.txt"]
    assert "it names 2 migration(s): iperf-test1 esx0.lab.local -> esx1.lab.local at 11/21/2026 6:01:56 AM" in events
    assert "not placed in the window" in events
    assert "DC0_C0_RP0_VM0 DC0_C0_H1 -> DC0_C0_H1" in unused["govc_events_l_vcsim_vm_migrate.txt"]


def test_a_dropping_port_of_a_pasted_network_screen_is_named(tmp_path):
    text = PARSERS["esxtop-net-panel"].sample.replace(
        "33554436 21153:Test vmnic3 vSwitch1 0.00 0.00 0.00 0.00 0.00 0.00",
        "33554436 21153:Test vmnic3 vSwitch1 0.00 0.00 9120.40 98.12 0.00 4.75")
    (tmp_path / "esxtop-n.txt").write_text(text)
    shutil.copy(FIX / "guest" / "seed002_ethtool_i_eth0.txt", tmp_path / "ethtool-i-eth0.txt")
    (unused,) = infer(tmp_path, tmp_path / ".work").manifest["unused_files"]
    assert "port 33554436 (21153:Test) %DRPRX 4.75" in unused["why"] and "esxtop -b" in unused["why"]
