"""Connection and command failures against the lab sshd: each is refused or bounded, names the
target, keeps secrets out, and lands in a bundle manifest with the right error_kind."""

from __future__ import annotations

import subprocess
import time

import pytest

from esxdiag.bundle import Bundle
from esxdiag.collectors.captures import record_failure, run_capture
from esxdiag.collectors.ssh import SshConnection, SshOptions, SshTarget
from esxdiag.errors import CollectionError

pytestmark = pytest.mark.lab


def _fingerprint(pub_line: str) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", "-"], input=pub_line, capture_output=True, text=True,
                         timeout=10, check=True)
    return out.stdout.split()[1]


def _connect_fails(lab, address, kind, options) -> CollectionError:
    with pytest.raises(CollectionError) as caught:
        SshConnection(SshTarget(lab.user, address, lab.port), kind, options).connect()
    assert f"{lab.user}@{address}:{lab.port}" in str(caught.value)
    return caught.value


def _manifest_kind(writer, error) -> str:
    record_failure(writer, f"target{len(writer.manifest['captures'])}", "net_stats_list", {}, error)
    return Bundle.load(writer.root).captures[-1].error_kind


def test_changed_host_key_is_refused_naming_both_fingerprints(lab, options, tmp_path, writer):
    pinned = tmp_path / "known_hosts"
    pinned.write_text(lab.changed_host_key_line(lab.host_address))
    before = len(lab.commands())
    error = _connect_fails(lab, lab.host_address, "esxi", SshOptions(**{**options.__dict__, "known_hosts": pinned}))
    real = " ".join(lab.known_hosts.read_text().splitlines()[0].split()[1:3])
    message = str(error)
    assert error.kind == "host-key" and "HOST KEY CHANGED" in message and "ssh-ed25519" in message
    assert _fingerprint(lab.spare_host_key_pub) in message and _fingerprint(real) in message
    assert len(lab.commands()) == before
    assert _manifest_kind(writer, error) == "host-key"


def test_unknown_host_is_refused_without_opt_in_and_nothing_runs(lab, options, tmp_path, writer):
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    before = len(lab.commands())
    error = _connect_fails(lab, lab.host_address, "esxi", SshOptions(**{**options.__dict__, "known_hosts": empty}))
    assert error.kind == "host-key" and "unknown host key ssh-ed25519 SHA256:" in str(error)
    assert "nothing was run" in str(error)
    assert not options.own_known_hosts.exists()
    assert lab.commands()[before:] == []
    assert _manifest_kind(writer, error) == "host-key"


def test_unknown_host_accepted_with_opt_in_is_stored_in_esxdiag_known_hosts(lab, options, tmp_path):
    empty = tmp_path / "user_known_hosts"
    empty.write_text("")
    accept = SshOptions(**{**options.__dict__, "known_hosts": empty, "accept_new_host_keys": True})
    with SshConnection(SshTarget(lab.user, lab.host_address, lab.port), "esxi", accept) as conn:
        assert conn.run_spec("esxi_version", {}).ok
    stored = options.own_known_hosts.read_text()
    assert stored.startswith(f"[{lab.host_address}]:{lab.port} ssh-ed25519 ")
    assert stored.split()[2] == lab.known_hosts.read_text().split()[2]
    assert empty.read_text() == ""  # the user's file is never written
    strict = SshOptions(**{**options.__dict__, "known_hosts": empty})
    with SshConnection(SshTarget(lab.user, lab.host_address, lab.port), "esxi", strict) as conn:
        assert conn.run_spec("esxi_version", {}).ok  # now known from esxdiag's own file


def test_closed_port_on_esxi_says_ssh_is_disabled_and_on_a_guest_refused(lab, options, writer):
    guest = lab.address_of("iperf-test2")
    lab.set_fault("refuse", address=lab.host_address)
    lab.set_fault("refuse", address=guest)
    esxi = _connect_fails(lab, lab.host_address, "esxi", options)  # the lab's port is not 22: a typed port
    assert esxi.kind == "refused" and f"connection refused on port {lab.port}" in str(esxi)
    assert "check the port in --host-ssh" in str(esxi) and "off by default" in str(esxi)
    linux = _connect_fails(lab, guest, "linux", options)
    assert linux.kind == "refused" and "--guest-ssh" in str(linux) and "ESXi" not in str(linux)
    assert _manifest_kind(writer, esxi) == "refused" and _manifest_kind(writer, linux) == "refused"
    lab.clear_faults()
    with SshConnection(SshTarget(lab.user, guest, lab.port), "linux", options) as conn:
        assert conn.run_spec("nproc", {}).stdout == b"2\n"


def test_sshd_down_is_refused(lab, options):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(CollectionError) as caught:
        SshConnection(SshTarget(lab.user, "127.0.0.1", port), "linux", options).connect()
    assert caught.value.kind == "refused" and f"127.0.0.1:{port}" in str(caught.value)


def test_wrong_password_is_an_auth_error_without_the_password(lab, options, writer):
    guest = lab.address_of("iperf-test1")
    wrong = "Wr0ng-" + lab.password[::-1]
    error = _connect_fails(lab, guest, "linux", SshOptions(**{**options.__dict__, "key_file": None, "password": wrong}))
    assert error.kind == "auth" and "password" in str(error)
    assert wrong not in str(error) and wrong not in repr(error.args)
    assert _manifest_kind(writer, error) == "auth"
    assert wrong not in (writer.root / "manifest.json").read_text()
    right = SshOptions(**{**options.__dict__, "key_file": None, "password": lab.password})
    assert lab.password not in repr(right)
    with SshConnection(SshTarget(lab.user, guest, lab.port), "linux", right) as conn:
        assert conn.run_spec("nproc", {}).ok


def test_wrong_key_is_an_auth_error(lab, options, writer):
    error = _connect_fails(lab, lab.host_address, "esxi", SshOptions(**{**options.__dict__, "key_file": lab.wrong_key_file}))
    assert error.kind == "auth" and str(lab.wrong_key_file) in str(error)
    assert _manifest_kind(writer, error) == "auth"


def test_hung_command_times_out_and_the_connection_stays_usable(lab, open_conn, writer):
    lab.set_fault("hang", address=lab.host_address, program="vmware", seconds=20)
    conn = open_conn(lab.host_address, "esxi", command_timeout_s=2)
    waits = []
    started = time.monotonic()
    capture, output = run_capture(conn, writer, "esx0", "esxi_version", on_wait=lambda e, t: waits.append(e))
    assert 2 <= time.monotonic() - started < 4
    assert capture.error_kind == "timeout" and capture.rc is None and "2 s" in capture.error
    assert waits and max(waits) < 2
    assert Bundle.load(writer.root).captures[-1].error_kind == "timeout"
    assert Bundle.load(writer.root).captures[-1].file is None and output == b""
    after = conn.run_spec("net_stats_list", {})
    assert after.ok and after.stdout.startswith(b"PortNum")


def test_failing_and_missing_commands_are_recorded_with_their_kind(lab, open_conn, writer):
    conn = open_conn(lab.host_address, "esxi")
    e1000 = {"portset": "vSwitch0", "port": "33554490"}  # legacy-e1000: no vmxnet3 node
    failed = run_capture(conn, writer, "esx0", "vsish_rxsummary", e1000, sample=0)[0]
    assert failed.error_kind == "nonzero-exit" and failed.rc == 1 and "Get failed" in failed.error
    lab.set_fault("missing", address=lab.host_address, program="net-stats")
    missing = run_capture(conn, writer, "esx0", "net_stats_list")[0]
    assert missing.error_kind == "not-found" and missing.rc == 127
    kinds = [(c.spec, c.error_kind, c.rc) for c in Bundle.load(writer.root).captures]
    assert kinds == [("vsish_rxsummary", "nonzero-exit", 1), ("net_stats_list", "not-found", 127)]
