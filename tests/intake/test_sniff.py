"""Every parser kind has a content sniffer; each recognises its own captures (the examples' manifests
say what every file is) and the real fixtures, and claims nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esxdiag.intake.sniff import SNIFFERS, netstat_spec, sniff_file, sniff_text, text_spec
from esxdiag.parsers import PARSERS
from esxdiag.specs import SPECS

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
REAL_ESXTOP = sorted((FIX / "esxtop").glob("esxtop_batch_*_verbatim.csv"))  # unmodified esxtop -b (README there)


PREFLIGHT = ("vsish_portsets", "esxtop_probe", "ethtool_version")  # probes that a tool runs, not evidence: a
#                                                                   folder of captures made by hand never holds them


def _example_captures():
    for manifest in sorted((ROOT / "examples").rglob("manifest.json")):
        for cap in json.loads(manifest.read_text())["captures"]:
            path = manifest.parent / cap["file"] if cap["file"] else None
            if path and path.is_file() and path.stat().st_size and cap["spec"] not in PREFLIGHT:
                yield pytest.param(path, SPECS[cap["spec"]].parser, id=str(path.relative_to(ROOT)))


FIXTURES = {
    "realworld/esxcli_nic_stats_vmnic0_cut_mark.txt": "esxcli-nic-stats",
    "vcenter/vsphere_events_drs_migration.json": "vsphere-events",
    "vcenter/vsphere_host_perf_vmnic1_drops.json": "vsphere-host-perf",
    "realworld/esxcfg_vswitch_l_vss_and_nvds.txt": "esxcfg-vswitch",
    "realworld/net_dvs_l_nvds_output_hidden.txt": "net-dvs",
    "realworld/esxtop_termcap_junk.csv": "esxtop",
    "realworld/esxtop_prompt_and_term_junk.csv": "esxtop",
    "realworld/esxtop_header_only.csv": "esxtop",
    "realworld/ip_s_link.txt": "ip-link",
    "realworld/ip_s_s_link_old_iproute2.txt": "ip-link",
    "realworld/win_netadapter_table_ps51.txt": "win-netadapter",
    "realworld/win_netadapter_table_truncated.txt": "win-netadapter",
    "realworld/win_netadapter_fl_no_mac.txt": "win-netadapter",
    "realworld/win_stats_table_ps51.txt": "win-stats",
    "realworld/win_stats_fl_snip.txt": "win-stats",
    "realworld/win_advprops_table_ps7_whole.txt": "win-advprops",
    "realworld/win_advprops_fl_displayname_only.txt": "win-advprops",
    "esxtop/cpu_panel_vswitchzero_iperf_seed002.txt": "esxtop-cpu-panel",
    "pastes/esxtop_net_panel_pktcap_blog_cut_header.txt": "esxtop-net-panel",
    "pastes/esxtop_net_panel_vmnic_binding_blog.txt": "esxtop-net-panel",
    "pastes/govc_events_vcsim_vm_migrate.txt": "vcenter-events-text",
    "pastes/govc_events_l_vcsim_vm_migrate.txt": "vcenter-events-text",
    "pastes/get_vievent_fl_vm_migrated.txt": "vcenter-events-text",
    "pastes/win_rss_default_view_hyperv_book.txt": "win-rss",
    "pastes/win_rss_x710_six_ports_no_blank_lines.txt": "win-rss",
    "pastes/win_stats_fl_three_adapters_no_blank_lines.txt": "win-stats",
    "esxtop/esxtop_batch_gsliu_VisualEsxtopOnline_excel_resaved.csv": "esxtop",
    "host/esxcli_network_nic_stats_get_vmnic9_intel_mfd_fixture.txt": "esxcli-nic-stats",
    "host/net_dvs_l_sneaku_l2vpn_sink.txt": "net-dvs",
    "host/net_dvs_l_sneaku_l2vpn_sink_no_elision.txt": "net-dvs",
    "host/net_dvs_l_nsx_opaque_uuid_ports.txt": "net-dvs",
    "host/esxcfg_vswitch_l_sneaku_l2vpn.txt": "esxcfg-vswitch",
    "host/esxcfg_vswitch_l_ucs_jumbo_misaligned.txt": "esxcfg-vswitch",
    "host/esxcli_vm_list_rayd62.txt": "esxcli-vm-list",
    "host/esxcli_vm_list_wzh_trailing_spaces.txt": "esxcli-vm-list",
    "host/esxcli_vm_port_list_rayd62_2178744.txt": "esxcli-vm-ports",
    "host/net_stats_A_pretty_warlock_first_port.json": "net-stats-json",
    "host/net_stats_A_raw_fgvm_ens.json": "net-stats-json",
    "host/net_stats_l_nsx_space_in_clientname.txt": "net-stats",
    "host/net_stats_l_no_eth_suffix_big_uplinks.txt": "net-stats",
    "host/seed002_net_stats_l_collapsed.txt": "net-stats",
    "host/seed002_rxqueue0_status_windows_512.txt": "vsish-rxqueue-status",
    "host/seed002_rxsummary_before.txt": "vsish-rxsummary",
    "host/vsish_pe_pNics_stats_python_mode_intel_mfd_fixture.txt": "vsish-python",
    "guest/ethtool_g_pri_netlink_insights_core_fixture.txt": "ethtool-rings",
    "guest/local_ip_link_show.txt": "ip-link",
    "guest/local_ip_o_link_show.txt": "ip-link",
    "guest/local_netstat_s.txt": "netstat",
    "guest/local_nstat_asz.txt": "netstat",
    "guest/local_nstat_asz_json.txt": "netstat",
    "guest/netstat_s_old_wording_insights_core.txt": "netstat",
    "guest/netstat_s_new_wording_elided_catplanet007.txt": "netstat",
    "guest/seed002_ethtool_S_grep_OOB_after.txt": "ethtool-stats",
    "guest/seed002_ethtool_S_grep_drop.txt": "ethtool-stats",
    "guest/seed002_netstat_s_grep_retransmit_before.txt": "netstat",
    "guest/seed002_ethtool_g_after.txt": "ethtool-rings",
    "guest/seed002_ethtool_i_eth0.txt": "ethtool-driver",
    "guest/win_advprops_vmxnet3.csv": "win-advprops",
    "guest/win_advprops_vmxnet3.json": "win-advprops",
    "guest/win_advprops_vmxnet3_fl_german_optional_absent.txt": "win-advprops",
    "guest/win_advprops_vmxnet3_fl_utf16le.txt": "win-advprops",
    "guest/win_advprops_vmxnet3_table_ps51.txt": "win-advprops",
    "guest/win_advprops_vmxnet3_table_ps7.txt": "win-advprops",
    "guest/win_Get-NetAdapterAdvancedProperty_select_all_fl_intel_e810_mfd_fixture.txt": "win-advprops",
    "guest/win_netadapter_vmxnet3.csv": "win-netadapter",
    "guest/win_netadapter_vmxnet3_fl.txt": "win-netadapter",
    "guest/win_netadapter_vmxnet3_typed.csv": "win-netadapter",
    "guest/win_rss_vmxnet3_fl.txt": "win-rss",
    "guest/win_stats_vmxnet3_fl.txt": "win-stats",
}

RING_PERSISTENCE = ("/etc/NetworkManager/system-connections/eth0.nmconnection:12:ring-rx=4096\n"
                    "/etc/udev/rules.d/60-rings.rules:1:ACTION==\"add\", RUN+=\"/sbin/ethtool -G eth0 rx 4096\"\n")


@pytest.mark.parametrize("path, kind", list(_example_captures()))
def test_every_example_capture_is_recognised_as_its_spec_kind(path, kind):
    assert sniff_file(path).kinds == (kind,)


@pytest.mark.parametrize("name, kind", sorted(FIXTURES.items()))
def test_real_fixtures_are_recognised(name, kind):
    assert sniff_file(FIX / name).kinds == (kind,)


def test_real_esxtop_captures_with_console_junk_are_recognised():
    assert len(REAL_ESXTOP) == 2
    for path in REAL_ESXTOP:
        assert sniff_file(path).kinds == ("esxtop",), path


def test_ring_persistence_grep_output_and_kinds_without_fixture_files():
    assert sniff_text(RING_PERSISTENCE).kinds == ("ring-persistence",)
    assert sniff_text("0/\n1/\n").kinds == ("vsish-ls",)
    assert sniff_text("Permanent address: 00:50:56:a6:55:f4\n").kinds == ("ethtool-permaddr",)


def test_every_parser_kind_has_a_sniffer_and_a_recognised_capture():
    assert set(SNIFFERS) == set(PARSERS)
    covered = set(FIXTURES.values()) | {p.values[1] for p in _example_captures()} | {"ring-persistence", "vsish-ls"}
    assert covered == set(PARSERS)


@pytest.mark.parametrize("text", ["", "lorem ipsum\n", "hello: world\n", "{\"a\": 1}\n", "Name : x\n",
                                  "stats of a vmxnet3 vNIC rx queue {\n}\n", "12\n13\n"])
def test_unknown_text_is_claimed_by_no_kind(text):
    assert sniff_text(text).kinds == ()


def test_binary_and_empty_files_say_why(tmp_path):
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "empty").write_bytes(b"")
    assert sniff_file(tmp_path / "bin").why == "binary data, not a text capture"
    assert sniff_file(tmp_path / "empty").why == "empty"


def test_a_file_two_kinds_claim_has_no_single_kind():
    both = (FIX / "host" / "seed002_rxsummary_before.txt").read_text() + \
        (FIX / "host" / "seed002_rxqueue0_status_windows_512.txt").read_text()
    sniffed = sniff_text(both)
    assert set(sniffed.kinds) == {"vsish-rxsummary", "vsish-rxqueue-status"} and sniffed.kind is None


def test_spec_choice_for_shared_kinds():
    assert text_spec("VMware ESXi 6.0.0 build-5224934\n", windows=False) == "esxi_version"
    assert text_spec("4\n", windows=False) == "nproc" and text_spec("4\n", windows=True) == "win_cpu"
    assert netstat_spec("#kernel\nIpInReceives 1\n") == "nstat" and netstat_spec("Tcp:\n") == "netstat_s"


@pytest.mark.parametrize("text", [" " * 65536, "a:" * 32768, "1: x: <" * 9000, "/e" * 32768 + ":",
                                  "NIC statistics:\n" + "pkts rx OOB" * 5000, "\n" * 65536, "Tcp:" + "9" * 65000,
                                  '{"schema": "' + "x" * 65000])
def test_sniffing_adversarial_heads_is_fast(text):
    import time

    started = time.perf_counter()
    sniff_text(text)
    assert time.perf_counter() - started < 1.0


def test_sniffing_random_text_never_raises():
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.text(max_size=2000))
    def check(text):
        assert isinstance(sniff_text(text).kinds, tuple)

    check()
