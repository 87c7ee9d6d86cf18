"""A failed live run carries no verdict (issue: "every headline true"): SSH refused, an unknown
host key, or no SSH flags at all (the default host name does not resolve here) exit 3, and the
first line says what failed and what the partial bundle holds, never "No ring change needed".
Run as a user runs esxdiag, against vcsim and the lab sshd."""

from __future__ import annotations

import pytest

from esxdiag.errors import EXIT_COLLECTION

pytestmark = pytest.mark.lab

VM = "iperf-test1"
VERDICT_WORDS = ("No ring change needed", "Raise RX ring", "CPU limit first", "CPU contention first")


def assert_failed_headline(run, why: str) -> None:
    assert run.returncode == EXIT_COLLECTION, run.explain()
    first = run.stdout.splitlines()[0]
    assert first.startswith("RUN FAILED: ") and why in first and "No verdict from a failed run" in first, run.explain()
    assert "the partial bundle holds: " in first and "vCenter VM inventory" in first, run.explain()
    assert not any(words in run.stdout for words in VERDICT_WORDS), run.explain()
    assert "-> Insufficient evidence: the run failed [insufficient-evidence]" in run.stdout, run.explain()


def test_ssh_refused(esxdiag, live):
    port = live.closed_port()
    run = esxdiag.run("rings", VM, "--no-guest", ssh=["--host-ssh", f"root@127.0.0.1:{port}"],
                      window=("--window", "20"))
    assert_failed_headline(run, f"127.0.0.1:{port}")


def test_unknown_host_key(esxdiag, ssh_lab, live, tmp_path):
    known = live.known_hosts_without(ssh_lab, ssh_lab.host_address, tmp_path / "known_hosts")
    ssh = ["--host-ssh", f"{ssh_lab.user}@{ssh_lab.host_address}:{ssh_lab.port}", "--known-hosts", str(known),
           "--ssh-key", str(ssh_lab.key_file)]
    run = esxdiag.run("rings", VM, "--no-guest", ssh=ssh, window=("--window", "20"))
    assert_failed_headline(run, "unknown host key")


def test_no_ssh_flags_at_all(esxdiag):
    run = esxdiag.run("rings", VM, "--no-guest", ssh=[], window=("--window", "20"))
    assert_failed_headline(run, "esx0.lab.local")
    html = esxdiag.run("report", VM, "--no-guest", ssh=[], window=("--window", "20"))
    assert html.returncode == EXIT_COLLECTION, html.explain()
    page = (html.bundle / "report.html").read_text()
    assert "RUN FAILED" in page and "No ring change needed" not in page
