"""connect() against vcsim: TLS policy, thumbprint pins, error kinds, logout, request counting."""

from __future__ import annotations

import socket

import pytest
from pyVmomi import vim

from esxdiag.collectors.vsphere import connect, server_thumbprints
from esxdiag.errors import CollectionError

pytestmark = pytest.mark.lab


def test_self_signed_certificate_is_refused_by_default(vcsim_lab, lab_creds):
    with pytest.raises(CollectionError) as err:
        connect(lab_creds(vcsim_lab), timeout_s=10)
    assert err.value.kind == "tls"
    assert f"127.0.0.1:{vcsim_lab.port}" in str(err.value)
    assert "not trusted" in str(err.value) and "--insecure" in str(err.value)


def test_insecure_connects_reports_vcenter_and_counts_requests(vcsim_lab, lab_creds):
    session = connect(lab_creds(vcsim_lab, insecure=True), timeout_s=10)
    try:
        assert session.source == "vcenter"
        before = session.request_count
        session.content.rootFolder.name  # one property read = one SOAP request
        assert session.request_count == before + 1
    finally:
        session.close()


@pytest.mark.parametrize("algorithm", ["sha1", "sha256"])
def test_right_thumbprint_pin_connects_without_insecure(vcsim_lab, lab_creds, algorithm):
    sha1, sha256 = server_thumbprints("127.0.0.1", vcsim_lab.port)
    assert sha256 == vcsim_lab.thumbprint
    pin = sha1 if algorithm == "sha1" else ":".join(sha256[i:i + 2] for i in range(0, 64, 2)).upper()
    session = connect(lab_creds(vcsim_lab, thumbprint=pin), timeout_s=10)
    session.close()
    assert session.creds.insecure is False


def test_wrong_thumbprint_pin_is_refused_even_with_insecure(vcsim_lab, lab_creds):
    wrong = "0" * 64
    for insecure in (False, True):
        with pytest.raises(CollectionError) as err:
            connect(lab_creds(vcsim_lab, thumbprint=wrong, insecure=insecure), timeout_s=10)
        assert err.value.kind == "tls"
        assert vcsim_lab.thumbprint in str(err.value) and "refusing" in str(err.value)


def test_wrong_password_is_auth(vcsim_lab, lab_creds):
    with pytest.raises(CollectionError) as err:
        connect(lab_creds(vcsim_lab, insecure=True, password="not-" + vcsim_lab.password), timeout_s=10)
    assert err.value.kind == "auth"
    assert vcsim_lab.username in str(err.value)
    assert vcsim_lab.password not in str(err.value)


def test_closed_port_is_unreachable(lab_creds, vcsim_lab):
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    creds = lab_creds(vcsim_lab, insecure=True)
    creds = type(creds)(f"https://127.0.0.1:{port}/sdk", creds.username, creds.password, True)
    with pytest.raises(CollectionError) as err:
        connect(creds, timeout_s=5)
    assert err.value.kind == "unreachable"
    assert f"127.0.0.1:{port}" in str(err.value)


def test_silent_server_is_timeout(lab_creds, vcsim_lab):
    with socket.socket() as silent:  # accepts TCP but never answers the TLS handshake
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        creds = lab_creds(vcsim_lab, insecure=True)
        creds = type(creds)(f"https://127.0.0.1:{port}/sdk", creds.username, creds.password, True)
        with pytest.raises(CollectionError) as err:
            connect(creds, timeout_s=1)
    assert err.value.kind == "timeout"


def test_close_logs_out(vcsim_lab, lab_creds):
    session = connect(lab_creds(vcsim_lab, insecure=True), timeout_s=10)
    session.close()
    with pytest.raises(vim.fault.NotAuthenticated):
        session.content.rootFolder.name
