"""Seeds and mutations for the fuzz tests: every parser kind seeded from real captures (the
bundled examples, whose manifests name each file's spec and so its parser, and the real-output
fixtures under tests/fixtures), damaged the ways captures get damaged."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from esxdiag.specs import SPECS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures"
SEED_LIMIT = 256 << 10  # bigger captures are seeded by their first lines (header + a few rows)

# real-output fixtures for kinds no example bundle holds (and a few more real quirks)
FIXTURE_SEEDS = {
    "win-stats": ["realworld/win_stats_fl_snip.txt", "realworld/win_stats_table_ps51.txt",
                  "pastes/win_stats_fl_three_adapters_no_blank_lines.txt"],
    "ip-link": ["realworld/ip_s_s_link_old_iproute2.txt", "realworld/ip_s_link.txt"],
    "esxtop": ["realworld/esxtop_prompt_and_term_junk.csv", "realworld/esxtop_termcap_junk.csv",
               "esxtop/esxtop_batch_gsliu_VisualEsxtopOnline_excel_resaved.csv",
               "esxtop/esxtop_batch_reduced_fields_3x5s_esxi6x_localhost_home_rach-sharp_esxtopd_verbatim.csv",
               "esxtop/esxtop_batch_full_3x5s_esxi6x_localhost_home_rach-sharp_esxtopd_verbatim.csv"],
    "esxtop-cpu-panel": ["esxtop/cpu_panel_vswitchzero_iperf_seed002.txt"],
    "esxtop-net-panel": ["pastes/esxtop_net_panel_pktcap_blog_cut_header.txt",
                         "pastes/esxtop_net_panel_vmnic_binding_blog.txt"],
    "vcenter-events-text": ["pastes/govc_events_l_vcsim_vm_migrate.txt", "pastes/govc_events_vcsim_vm_migrate.txt",
                            "pastes/get_vievent_fl_vm_migrated.txt"],
    "win-rss": ["pastes/win_rss_default_view_hyperv_book.txt", "pastes/win_rss_x710_six_ports_no_blank_lines.txt"],
    "vsish-python": ["host/vsish_pe_pNics_stats_python_mode_intel_mfd_fixture.txt"],
    "vsish-rxsummary": ["host/seed002_rxsummary_before.txt"],
    "net-stats-json": ["host/net_stats_A_raw_fgvm_ens.json", "host/net_stats_A_pretty_warlock_first_port.json"],
    "net-stats": ["host/net_stats_l_nsx_space_in_clientname.txt"],
    "esxcfg-vswitch": ["realworld/esxcfg_vswitch_l_vss_and_nvds.txt", "host/esxcfg_vswitch_l_sneaku_l2vpn.txt",
                       "host/esxcfg_vswitch_l_ucs_jumbo_misaligned.txt"],
    "net-dvs": ["realworld/net_dvs_l_nvds_output_hidden.txt", "host/net_dvs_l_sneaku_l2vpn_sink_no_elision.txt",
                "host/net_dvs_l_nsx_opaque_uuid_ports.txt"],
    "esxcli-vm-list": ["host/esxcli_vm_list_rayd62.txt", "host/esxcli_vm_list_wzh_trailing_spaces.txt"],
    "esxcli-vm-ports": ["host/esxcli_vm_port_list_rayd62_2178744.txt"],
    "esxcli-nic-stats": ["realworld/esxcli_nic_stats_vmnic0_cut_mark.txt",
                         "host/esxcli_network_nic_stats_get_vmnic9_intel_mfd_fixture.txt"],
    "ethtool-stats": ["guest/seed002_ethtool_S_grep_OOB_before.txt"],
    "vsphere-events": ["vcenter/vsphere_events_drs_migration.json"],
    "vsphere-host-perf": ["vcenter/vsphere_host_perf_vmnic1_drops.json"],
    "ethtool-rings": ["guest/ethtool_g_pri_netlink_insights_core_fixture.txt"],
    "netstat": ["guest/netstat_s_old_wording_insights_core.txt", "guest/local_nstat_asz.txt",
                "guest/local_nstat_asz_json.txt"],
    "win-advprops": ["realworld/win_advprops_fl_displayname_only.txt", "realworld/win_advprops_table_ps7_whole.txt",
                     "guest/win_advprops_vmxnet3.csv", "guest/win_advprops_vmxnet3.json",
                     "guest/win_advprops_vmxnet3_fl_utf16le.txt"],
    "win-netadapter": ["realworld/win_netadapter_fl_no_mac.txt", "realworld/win_netadapter_table_ps51.txt",
                       "guest/win_netadapter_vmxnet3_fl.txt"],
}


def seeds() -> dict[str, list[Path]]:
    """Parser kind -> real captures of that kind."""
    found: dict[str, list[Path]] = {}
    for manifest in sorted(EXAMPLES.rglob("manifest.json")) + sorted((FIXTURES / "situations").rglob("manifest.json")):
        for capture in json.loads(manifest.read_text())["captures"]:
            if capture.get("file") and capture["spec"] in SPECS:
                path = manifest.parent / capture["file"]
                if path.is_file():
                    found.setdefault(SPECS[capture["spec"]].parser, []).append(path)
    for kind, names in FIXTURE_SEEDS.items():
        found.setdefault(kind, []).extend(FIXTURES / name for name in names)
    return {kind: sorted(set(paths))[:12] for kind, paths in found.items()}


def seed_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if len(data) <= SEED_LIMIT:
        return data
    lines = data.splitlines(keepends=True)
    return b"".join(lines[:3]) if len(lines[0]) < SEED_LIMIT else data[:SEED_LIMIT]


HOSTILE_NUMBERS = [b"9" * 5000, b"-1", b"-256", b"18446744073709551616", b"nan", b"NaN", b"inf", b"-Infinity",
                   b"1e999", "\u00b2".encode(), "\u00b3".encode(), "\u0663".encode(), "\uff11\uff12".encode(), b"0x10",
                   b"1_000", b"", b" "]
LONG_FILL = [b" ", b"a", b"1", b":", b"[", b"{", b'"', b",", b"\t", b"1:", b"a:111"]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [data]


@st.composite
def damaged(draw, data: bytes, other: bytes = b"") -> bytes:
    """One or two damages of ``data`` (``other`` is a second capture to paste in)."""
    for _ in range(draw(st.integers(1, 2))):
        data = draw(st.sampled_from(_DAMAGES))(draw, data, other)
    return data


def _truncate_lines(draw, data, other):
    lines = _lines(data)
    return b"".join(lines[: draw(st.integers(0, len(lines)))])


def _truncate_bytes(draw, data, other):
    return data[: draw(st.integers(0, len(data)))]


def _flip(draw, data, other):
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        if buf:
            buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
    return bytes(buf)


def _number(draw, data, other):
    digits = [i for i, b in enumerate(data) if 48 <= b <= 57]
    if not digits:
        return data + draw(st.sampled_from(HOSTILE_NUMBERS))
    at = draw(st.sampled_from(digits))
    end = at
    while end < len(data) and 48 <= data[end] <= 57:
        end += 1
    return data[:at] + draw(st.sampled_from(HOSTILE_NUMBERS)) + data[end:]


def _encoding(draw, data, other):
    text = data.decode("utf-8", "replace")
    choice = draw(st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "crlf", "cr", "bom8", "latin1"]))
    if choice == "crlf":
        return text.replace("\n", "\r\n").encode()
    if choice == "cr":
        return text.replace("\n", "\r").encode()
    if choice == "bom8":
        return b"\xef\xbb\xbf" + data
    if choice == "latin1":
        return text.encode("latin-1", "replace")
    return text.encode(choice)  # "utf-16" writes a BOM, -le/-be do not


def _nul(draw, data, other):
    at = draw(st.integers(0, len(data)))
    return data[:at] + b"\x00" * draw(st.integers(1, 3)) + data[at:]


def _long_line(draw, data, other):
    lines = _lines(data)
    at = draw(st.integers(0, len(lines)))
    fill = draw(st.sampled_from(LONG_FILL))
    line = fill * ((1 << 20) // len(fill)) + draw(st.sampled_from([b"\n", b"x\n", b""]))
    return b"".join(lines[:at]) + line + b"".join(lines[at:])


def _duplicate_block(draw, data, other):
    lines = _lines(data)
    start = draw(st.integers(0, len(lines) - 1))
    end = draw(st.integers(start + 1, len(lines)))
    return b"".join(lines[:end] + lines[start:end] + lines[end:])


def _concatenate(draw, data, other):
    return data + draw(st.sampled_from([data, other or data]))


_DAMAGES = [_truncate_lines, _truncate_bytes, _flip, _number, _number, _encoding, _nul, _long_line,
            _duplicate_block, _concatenate]
