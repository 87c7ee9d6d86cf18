"""Issue 25 point 14, the small ones: plurals in the fleet text, a net-stats vNIC label said once,
a failed vCenter's error kind said once on the page, the fleet row text and table agreeing on a
rounded figure, and a ring size change named in `esxdiag diff`. (A mistyped VM name leaving no
empty bundle folder is tests/live/test_first_hour_typo.py: it needs vcsim.)"""

from __future__ import annotations

import copy
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.reports.fleet_html import render_fleet_html
from esxdiag.reports.fleet_text import render_fleet_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_spec = importlib.util.spec_from_file_location("fleet_snapshots", ROOT / "tests" / "fleet" / "fleet_snapshots.py")
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)


def _esxdiag(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "esxdiag", *args], capture_output=True, text=True, timeout=120,
                          check=True).stdout


def test_deep_checks_count_one_host_as_one_host():
    document = build_report(snapshot_from_dict(fs.snapshot([fs.vm("a"), fs.vm("b"), fs.vm("c")])), load_thresholds()).as_dict()
    document["deep"] = {"vms": [{"name": n, "vcenter": "vc1:443", "host": "esx1", "verdicts": [], "error": None,
                                 "report": None} for n in "abc"],
                        "hosts": [{"vcenter": "vc1:443", "host": "esx1", "error": None, "bundle": None}]}
    text = render_fleet_text(document)
    assert "Deep checks (3 VMs on 1 host):" in text, text


def test_a_net_stats_vnic_label_is_not_prefixed_twice(tmp_path):
    """A loose folder of host captures only: the vNIC's name is net-stats' "vNIC 0"."""
    host = EXAMPLES / "iperf-test1-ring-exhaustion" / "esxi-esx0.lab.local"
    loose = tmp_path / "case"
    loose.mkdir()
    shutil.copy(host / "net_stats_list.txt", loose / "netstats.txt")
    for n, when in ((0, "before"), (1, "after")):
        shutil.copy(host / f"vsish_rxsummary@port=33554464,portset=vSwitch0.s{n}.txt",
                    loose / f"rxsummary-{when}-33554464.txt")
    text = _esxdiag("analyze", str(loose), "--format", "text")
    assert "vNIC 0 00:50:56:a6:55:f4" in text and "vNIC vNIC" not in text, text


def test_a_failed_vcenters_error_kind_is_said_once_on_the_page():
    snap = fs.snapshot([fs.vm("a")], vcenters=["vc1:443", "vc2:443"])
    snap["vcenters"][1] = fs.vcenter("vc2:443", status="failed")
    page = render_fleet_html(build_report(snapshot_from_dict(snap), load_thresholds()).as_dict())
    assert "Not scanned: vc2:443</strong> — vc2:443: unreachable (Connection refused)." in page
    assert "(unreachable)" not in page


def test_the_fleet_row_text_and_table_print_the_same_rounded_figure():
    """308 drops of 1.5 M packets: 0.20533 per 1,000 is 0.205 in the document, so 0.20 in the table;
    the row text said 0.21 from the unrounded figure."""
    vm = fs.vm("edge", drops=[20] * 14 + [28], packets=100_000)
    document = build_report(snapshot_from_dict(fs.snapshot([copy.deepcopy(vm)])), load_thresholds()).as_dict()
    (row,) = document["vms"]
    shown = f"{row['drops_per_1000']:.2f}"
    assert f"{shown} per 1,000 packets" in row["reason"], (row["reason"], row["drops_per_1000"])
    assert f" {shown} " in render_fleet_text(document)


def test_diff_names_a_ring_size_change():
    text = _esxdiag("diff", str(EXAMPLES / "seed-by-hand" / "iperf-test1"),
                    str(EXAMPLES / "seed-by-hand" / "iperf-test1-ring4096"))
    line = next(line for line in text.splitlines() if line.strip().startswith("ring 1 size"))
    assert line.split()[-3:] == ["256", "4,096", "raised"], line
