"""esxdiag diff on the examples: the ring change from 256 to 4096 in numbers, from bundles, folders
and report JSONs, in text, JSON and HTML."""

from __future__ import annotations

import json

import pytest

from esxdiag.compare import NotComparable, change, compare
from esxdiag.reports.diff import render_diff_html


@pytest.fixture
def ring_change(kit):
    return kit.ROOT / "examples" / "iperf-test1-ring-exhaustion", kit.ROOT / "examples" / "iperf-test1-ring4096"


def test_ring_change_in_numbers_from_two_bundles(kit, ring_change):
    proc = kit.run("diff", *ring_change, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    diff = json.loads(proc.stdout)
    nic = diff["vms"][0]["vnics"][0]
    assert nic["verdict"] == ["raise-ring1", "raise-ring2"]
    assert nic["sizes"]["ring1_size"] == [256, 4096] and nic["sizes"]["ring2_size"] == [256, 256]
    rates = nic["rates"]
    assert rates["ring1_full"]["after"] == 0 and rates["ring1_full"]["change"] == "to zero"
    assert rates["host_out_of_buffers"]["before"] > 5 * rates["host_out_of_buffers"]["after"] > 0
    assert rates["host_out_of_buffers"]["change"].endswith("x lower")
    assert diff["vms"][0]["cpu"]["ready_pct_max"]["before"] is not None
    assert diff["vms"][0]["tcp"]["retransmits_per_1000_sent"]["before"] == 0
    assert any("matched by label" in n for n in diff["notes"])


def test_the_seeds_own_before_and_after(kit):
    """The seed's printed figures, before and after ring 1 = 4096 (both guests rebooted to clear the counters
    before the rerun, whose length is not printed): totals over the test, per VM, and no rate for the after side."""
    seed = kit.ROOT / "examples" / "seed-by-hand"
    proc = kit.run("diff", seed / "iperf-test1", seed / "iperf-test1-ring4096", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    diff = json.loads(proc.stdout)
    vms = {vm["name"]: vm for vm in diff["vms"]}
    nic = vms["iperf-test1"]["vnics"][0]
    assert nic["mac"] == "00:50:56:a6:55:f4" and nic["verdict"] == ["raise-ring1", "raise-ring2"]
    assert nic["sizes"]["ring1_size"] == [256, 4096] and nic["sizes"]["ring2_size"] == [256, 256]
    totals = nic["totals"]
    assert (totals["host_out_of_buffers"]["before"], totals["host_out_of_buffers"]["after"]) == (10370, 1656)
    assert totals["host_out_of_buffers"]["change"] == "6.3x lower"
    assert (totals["ring1_full"]["before"], totals["ring1_full"]["after"], totals["ring1_full"]["change"]) == (
        7086, 0, "to zero")
    assert (totals["ring2_full"]["before"], totals["ring2_full"]["after"]) == (3284, 1656)
    assert (totals["guest_oob"]["before"], totals["guest_oob"]["after"]) == (7129 + 3241, 505 + 1151)
    assert nic["rates"]["host_out_of_buffers"] == {"before": 34.567, "after": None, "change": None}
    sender = vms["iperf-test2"]["tcp"]
    assert sender["retransmitted_segments_total"] == {"before": 86715, "after": 48, "change": "1806.6x lower"}
    assert sender["retransmitted_segments"]["change"] is None  # a 60 s window against a whole test
    assert any("AFTER's unknown" in n and "totals" in n for n in diff["notes"])


def test_window_counts_compare_only_over_equal_windows():
    def doc(window, delta, total):
        counter = {"delta": delta, "total": total, "seconds": window}
        return {"schema_version": 1, "bundle": {"window_s": window},
                "vms": [{"name": "vm", "vnics": [], "tcp": {"retransmitted_segments": counter}}]}

    same = compare(doc(60.0, 100, 500), doc(60.0, 10, 20))
    assert same["vms"][0]["tcp"]["retransmitted_segments"]["change"] == "10.0x lower" and same["notes"] == []
    other = compare(doc(60.0, 100, 500), doc(300.0, 10, 20))
    assert other["vms"][0]["tcp"]["retransmitted_segments"]["change"] is None
    assert other["vms"][0]["tcp"]["retransmitted_segments_total"]["change"] == "25.0x lower"
    assert "rates per second are compared, counts in the window are not" in other["notes"][0]


def test_text_and_html_outputs(kit, ring_change, tmp_path):
    text = kit.run("diff", *ring_change)
    assert text.returncode == 0
    assert "out-of-buffer drops per s" in text.stdout and "raise-ring1" in text.stdout
    html = kit.run("diff", *ring_change, "--format", "html", "-o", tmp_path / "d.html")
    assert html.returncode == 0 and "<h2>VM iperf-test1 -&gt; iperf-test1-ring4096</h2>" in (tmp_path / "d.html").read_text()


def test_report_jsons_and_a_folder_compare_like_bundles(kit, ring_change, tmp_path, seed_folder):
    before_json = tmp_path / "before.json"
    assert kit.run("analyze", ring_change[0], "--format", "json", "-o", before_json).returncode == 0
    proc = kit.run("diff", before_json, ring_change[1], "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["vms"][0]["vnics"][0]["verdict"] == ["raise-ring1", "raise-ring2"]
    proc = kit.run("diff", seed_folder, kit.SEED, "--vm", "iperf-test1", "--format", "json")
    nic = json.loads(proc.stdout)["vms"][0]["vnics"][0]
    assert nic["verdict"] == ["raise-ring1", "raise-ring1"]
    assert nic["rates"]["host_out_of_buffers"]["change"] == "unchanged"


def test_seed_sender_retransmits_per_1000_segments(kit):
    sender = kit.ROOT / "examples" / "iperf-test2-sender"
    diff = json.loads(kit.run("diff", sender, sender, "--format", "json").stdout)
    tcp = diff["vms"][0]["tcp"]
    assert tcp["retransmitted_segments"]["before"] > 1000
    assert tcp["retransmits_per_1000_sent"]["before"] == pytest.approx(
        1000 * tcp["retransmitted_segments"]["before"] / 10287693, rel=0.01)


def test_different_vms_are_not_compared(kit):
    doc = {"schema_version": 1, "vms": [{"name": "a", "vnics": []}, {"name": "b", "vnics": []}]}
    other = {"schema_version": 1, "vms": [{"name": "c", "vnics": []}]}
    with pytest.raises(NotComparable, match="not the same VM"):
        compare(doc, other)
    with pytest.raises(NotComparable, match="not in AFTER"):
        compare(doc, other, vm="a")


def test_bad_report_json_is_one_line_exit_2(kit, tmp_path, ring_change):
    bad = tmp_path / "r.json"
    bad.write_text('{"schema_version": 1}')
    proc = kit.run("diff", bad, ring_change[1])
    assert proc.returncode == 2 and "not an esxdiag report JSON" in proc.stderr
    bad.write_text("[" * 100000)
    proc = kit.run("diff", bad, ring_change[1])
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_hostile_names_are_escaped_in_html():
    vm = {"name": "<script>x</script>", "vnics": [{"mac": "m", "label": "<b>", "ring_verdict": "not-needed",
                                                    "metrics": {}, "guest_interface": None}], "cpu": {}}
    diff = compare({"schema_version": 1, "vms": [vm]}, {"schema_version": 1, "vms": [vm]})
    html = render_diff_html({**diff, "before": {"source": "<i>", "window_s": 1}, "after": {"source": "x", "window_s": 1}})
    assert "<script>" not in html and "&lt;script&gt;" in html and "<i>" not in html


@pytest.mark.parametrize("before, after, words", [(10, 1, "10.0x lower"), (1, 4, "4.0x higher"), (3, 0, "to zero"),
                                                  (0, 2, "from zero"), (5, 5, "unchanged"), (None, 1, None)])
def test_change_words(before, after, words):
    assert change(before, after) == words
