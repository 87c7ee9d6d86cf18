"""What a live run sends and keeps: only the commands esxdiag.specs renders reach the host and the
guests (the lab sshd logs every command it receives), and no password ends up in the bundle, the
report or the terminal."""

from __future__ import annotations

import pytest

from esxdiag.specs import SPECS

pytestmark = pytest.mark.lab


def test_hosts_and_guests_receive_only_spec_rendered_commands(esxdiag, ssh_lab, live):
    before = len(ssh_lab.commands())
    runs = esxdiag.run_many([("report", "iperf-test1", ("-o", str(esxdiag.workdir / "report.html"))),
                             ("rings", "win2012r2-file01", ())])
    for run in runs:
        assert run.returncode == 0, run.explain()
    received = ssh_lab.commands()[before:]
    captures = [c for run in runs for c in run.bundle_loaded().captures if c.command and SPECS[c.spec].argv]
    for capture in captures:  # what the manifest says was run is exactly the spec's rendering
        assert capture.command == SPECS[capture.spec].render(**capture.params), capture
    allowed = live.rendered_by_specs(captures)
    assert received and all(entry["accepted"] for entry in received), [e for e in received if not e["accepted"]]
    assert sorted(e["command"] for e in received) == sorted(c.command for c in captures)
    assert {e["command"] for e in received} <= allowed
    by_address = {}
    for entry in received:
        by_address.setdefault(entry["address"], set()).add(entry["target"])
    assert by_address == {ssh_lab.host_address: {"esxi"}, ssh_lab.address_of("iperf-test1"): {"iperf-test1"},
                          ssh_lab.address_of("win2012r2-file01"): {"win2012r2-file01"}}
    windows = {e["command"] for e in received if e["target"] == "win2012r2-file01"}
    assert windows and all(c.startswith("powershell -NoProfile -NonInteractive -Command ") for c in windows)


def test_passwords_never_reach_bundle_report_or_terminal(esxdiag, ssh_lab, vcsim, live):
    report = esxdiag.workdir / "report.html"
    env = esxdiag.env(ESXDIAG_HOST_PASSWORD=ssh_lab.password, ESXDIAG_GUEST_PASSWORD=ssh_lab.password)
    no_key = esxdiag.ssh_args(key=None)
    assert "--ssh-key" not in no_key
    run = esxdiag.run("report", "iperf-test1", "-o", str(report), env=env, ssh=no_key)
    assert run.returncode == 0, run.explain()
    assert "RAISE RX RING 1" in run.stdout  # password logins worked on the host and the guest
    assert all(c.ok for c in run.bundle_loaded().captures), run.explain()
    for secret in (vcsim.password, ssh_lab.password):
        assert secret not in run.stdout and secret not in run.stderr
        assert live.files_containing(run.bundle, secret) == []
        assert secret not in report.read_text(encoding="utf-8")
        assert secret not in " ".join(run.argv)
        assert all(secret not in e["command"] for e in ssh_lab.commands())
