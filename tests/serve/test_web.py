"""serve's web side on 127.0.0.1: the fleet page, a VM's page with its past and deep check,
/metrics, /healthz, the deep reports (never a file outside them), read-only; TLS and basic auth
from an exporter-style web config; anything but loopback refused without both."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import ssl
from datetime import datetime, timedelta, timezone
from pathlib import Path

import bcrypt
import pytest

from esxdiag.cli import main
from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store
from esxdiag.serve.webconfig import WebConfigError, authorized, load_web_config

from .conftest import VNIC, record_deep

HOSTILE = '<img src=x onerror=alert(1)>'  # as in the web_server fixture (tests/serve/conftest.py)


def get(server, path, method="GET", headers=None, context=None):
    host, port = server.server_address[:2]
    conn = (http.client.HTTPSConnection(host, port, context=context, timeout=10) if context
            else http.client.HTTPConnection(host, port, timeout=10))
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_the_fleet_page_shows_both_vcenters_links_each_vm_and_escapes(web_server):
    server = web_server
    status, headers, body = get(server, "/")
    html = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Cache-Control"] == "no-store"
    assert "1 of 2 vCenters not scanned: vc2:443: unreachable (refused)" in html  # the stale one, said first
    assert "Its VMs below are from its last good scan" in html and "db01" in html
    assert 'href="vm/vc1%3A443/vm-1"' in html
    assert HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    status, _, body = get(server, "/fleet.json")
    assert status == 200 and {r["name"] for r in json.loads(body)["vms"]} == {"ring01", HOSTILE, "db01"}
    assert get(server, "/fleet.csv")[0] == 200 and get(server, "/fleet.txt")[0] == 200


def test_a_vm_page_has_its_class_its_past_as_charts_and_its_last_deep_report(web_server):
    server = web_server
    status, _, body = get(server, "/vm/vc1%3A443/vm-1")
    html = body.decode()
    assert status == 200 and ">ring-exhaustion</span>" in html and "Past scans (2)" in html
    assert html.count("<svg") == 2 and "Receive drops per second" in html and "Worst-vCPU %RDY" in html
    assert 'href="../../deep/vc1_443/20261123T024500Z/esx1/report.html"' in html and "34.614" in html
    status, headers, body = get(server, "/deep/vc1_443/20261123T024500Z/esx1/report.html")
    assert status == 200 and b"deep report" in body and headers["Content-Type"].startswith("text/html")
    stale = get(server, "/vm/vc2%3A443/vm-9")[2].decode()
    assert "Stale:" in stale and "unreachable (refused)" in stale
    assert get(server, "/vm/vc1%3A443/vm-404")[0] == 404 and get(server, "/vm/vc9%3A443/vm-1")[0] == 404


@pytest.mark.parametrize("path", ["/deep/../h.sqlite", "/deep/%2e%2e/h.sqlite", "/deep/%2e%2e/%2e%2e/secret.txt",
                                  "/deep/vc1_443/20261123T024500Z/esx1/escape", "/deep/vc1_443/",
                                  "/deep//etc/passwd", "/nothing"])
def test_nothing_outside_the_deep_reports_is_served(web_server, path):
    server = web_server
    status, _, body = get(server, path)
    assert status == 404 and b"outside" not in body and b"SQLite" not in body


def test_metrics_healthz_gzip_and_read_only(web_server):
    server = web_server
    status, headers, body = get(server, "/metrics", headers={"Accept-Encoding": "gzip"})
    text = gzip.decompress(body).decode()
    assert status == 200 and headers["Content-Encoding"] == "gzip" and headers["Content-Type"].startswith("text/plain")
    assert "esxdiag_deep_vnic_verdict{" in text and "esxdiag_vcenter_stale{vcenter=\"vc2:443\"} 1.0" in text
    status, headers, _ = get(server, "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    health = json.loads(get(server, "/healthz")[2])
    assert [(v["vcenter"], v["stale"]) for v in health["vcenters"]] == [("vc1:443", False), ("vc2:443", True)]
    status, headers, _ = get(server, "/", method="POST")
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, headers, body = get(server, "/", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 1000


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False).sign(key, hashes.SHA256()))
    (tmp_path / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    (tmp_path / "tls.key").chmod(0o600)
    return tmp_path / "tls.crt", tmp_path / "tls.key"


def web_config(tmp_path: Path, password: str = "s3cret pass") -> Path:
    self_signed(tmp_path)
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode().replace("$2b$", "$2y$")
    path = tmp_path / "web.yml"
    path.write_text(f"tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
                    f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    path.chmod(0o600)
    return path


def test_tls_and_basic_auth_from_the_web_config(tmp_path, fleet_document, make_vm, start_web):
    config = load_web_config(web_config(tmp_path))
    assert config.secure and "s3cret" not in repr(config) and "$2y$" not in repr(config)
    state = State([VcenterState("vc1:443", "https://vc1/sdk", 300, document=fleet_document("vc1:443", []),
                                last_ok=True)])
    server = start_web(state, Store(tmp_path / "h.sqlite", 7), tmp_path / "data", config)
    client = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
    good = "Basic " + base64.b64encode(b"prometheus:s3cret pass").decode()
    assert get(server, "/metrics", headers={"Authorization": good}, context=client)[0] == 200
    for wrong in (None, "Basic " + base64.b64encode(b"prometheus:nope").decode(),
                  "Basic " + base64.b64encode(b"nobody:s3cret pass").decode(), "Bearer x", "Basic !!!"):
        status, headers, _ = get(server, "/healthz", headers={"Authorization": wrong} if wrong else {},
                                 context=client)
        assert status == 401 and headers["WWW-Authenticate"] == 'Basic realm="esxdiag"'
    with pytest.raises((http.client.HTTPException, ConnectionError)):  # plain HTTP to the TLS port: no page
        get(server, "/")


@pytest.mark.parametrize("name, said", [("web.yml", "web config {} holds password hashes"),
                                        ("tls.key", "TLS key file {} holds a private key")])
def test_a_web_config_or_tls_key_others_may_read_is_refused(tmp_path, name, said):
    path = web_config(tmp_path)
    (tmp_path / name).chmod(0o640)
    with pytest.raises(WebConfigError, match=f"{said.format(tmp_path / name)} but is accessible by group/other "
                       r"\(mode -rw-r-----\): run chmod 600"):
        load_web_config(path)
    (tmp_path / name).chmod(0o600)
    assert load_web_config(path).secure


def test_web_config_mistakes_are_refused_by_name(tmp_path):
    path = web_config(tmp_path)
    text = path.read_text()
    for bad, said in ((text + "http_server_config:\n  http2: false\n", "unsupported key(s) http_server_config"),
                      (text.replace("key_file: tls.key", "key_file: missing.key"), "cannot load"),
                      ("basic_auth_users:\n  alice: plaintext\n", "not a bcrypt hash"),
                      ("tls_server_config:\n  cert_file: tls.crt\n", "needs cert_file and key_file"),
                      ("- a list\n", "must be a YAML mapping")):
        path.write_text(bad)
        with pytest.raises(WebConfigError, match=said.replace("(", r"\(").replace(")", r"\)")):
            load_web_config(path)
    assert authorized(None, {}) is True


def test_anything_but_loopback_needs_tls_and_basic_auth(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    only_tls = tmp_path / "tls-only.yml"
    self_signed(tmp_path)
    only_tls.write_text("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n")
    base = ["serve", "--vcenter", "https://127.0.0.1:9/sdk", "--user", "u", "--history", str(tmp_path / "h.sqlite")]
    for extra in (["--listen", "0.0.0.0:9683"], ["--listen", ":9683"], ["--listen", "[::]:9683"],
                  ["--listen", "192.0.2.1:9683", "--web-config", str(only_tls)]):
        assert main(base + extra) == 2
        assert "anything but loopback needs TLS and basic auth" in capsys.readouterr().err
    assert main(base + ["--listen", "localhost"]) == 2 and "expected HOST:PORT" in capsys.readouterr().err


def test_a_vm_page_says_when_its_class_does_not_rest_on_the_last_deep_check(tmp_path, fleet_document, make_vm,
                                                                            start_web):
    """The history's last check of a VM whose row shows none (it expired, or the counters retired it) is
    shown as such: the class above and /metrics do not rest on it (issue 31: the page and /metrics agree)."""
    store = Store(tmp_path / "h.sqlite", retention_days=7)
    document = fleet_document("vc1:443", [make_vm("busy01", "vm-5", drops=300)])
    store.record(document)
    record_deep(store, "vc1:443", [{"moid": "vm-5", "name": "busy01", "verdicts": ["cpu-limit-first"],
                                    "worst_severity": "critical", "report": None, "error": None,
                                    "vnics": [dict(VNIC, verdict="cpu-limit-first")]}],
                "2026-11-23T02:46:00Z", held=False)
    now = datetime.now(timezone.utc).timestamp()
    state = State([VcenterState("vc1:443", "https://vc1/sdk", 300, document=document, good_ts=now, last_ok=True)])
    server = start_web(state, store, tmp_path / "data", load_web_config(None))
    html = get(server, "/vm/vc1%3A443/vm-5")[2].decode()
    assert "cpu-limit-first" in html and 'id="deep-history"' in html and "does not rest on" in html
    assert 'verdict="cpu-limit-first"' not in get(server, "/metrics")[2].decode()
