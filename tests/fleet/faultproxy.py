"""A fault-injecting TLS proxy on 127.0.0.1 in front of vcsim, for the fault tests (test_faults_*.py).

Every request is forwarded to vcsim unchanged (its answer read whole); a request whose SOAP method
matches a fault rule gets the rule's answer instead:

  cut            vcsim's answer less its last ``size`` bytes, close-delimited (no Content-Length)
  close          vcsim's whole answer, close-delimited (the control for ``cut``)
  cut-length     vcsim's answer less its last ``size`` bytes, with the whole answer's Content-Length
  html           ``status`` (200) with an HTML "service unavailable" page, text/html
  html-as-xml    the same page labelled text/xml
  xhtml          well-formed XHTML, text/xml
  not-envelope   well-formed XML that is no SOAP envelope, text/xml
  empty-envelope a SOAP envelope whose Body holds no answer
  trickle        vcsim's answer ``size`` bytes every ``every`` seconds (each read is prompt, the whole never)
  huge-fault     a SOAP fault (HTTP 500) whose faultstring is ``size`` characters
  fault          a SOAP fault (HTTP 500) of type ``text`` (e.g. "SystemError")
  perf-value     vcsim's QueryPerf answer with the first counter series' first value replaced by ``text``
  sample-time    vcsim's QueryPerf answer with the first entity's first sample time replaced by ``text``

A rule fires on its method's requests after ``skip`` of them passed, ``times`` times (None: always).
``proxy.seen`` lists every method forwarded, in order.
"""

from __future__ import annotations

import datetime
import hashlib
import http.client
import re
import socket
import socketserver
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HTML = (b"<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head><body>\n"
        b"<h1>Service Unavailable</h1><p>The server is temporarily unable to service your request.<br>\n"
        b"Please try again later.</p></body></html>\n")
XHTML = b"<html><head><title>Service Unavailable</title></head><body><h1>Service Unavailable</h1></body></html>"
NOT_ENVELOPE = b'<?xml version="1.0"?>\n<status><code>503</code><text>maintenance</text></status>\n'
SOAP_HEAD = (b'<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/'
             b'soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/'
             b'2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n<soapenv:Body>')
SOAP_TAIL = b"</soapenv:Body>\n</soapenv:Envelope>"
_METHOD = re.compile(rb"<(?:[\w.-]+:)?Body[^>]*>\s*<(?:[\w.-]+:)?([\w.-]+)")
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding"}


@dataclass
class Rule:
    method: str
    action: str
    size: int = 200
    status: int = 200
    every: float = 0.5
    text: str = ""
    skip: int = 0
    times: int | None = 1
    fired: int = 0

    def take(self) -> bool:
        if self.skip > 0:
            self.skip -= 1
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        self.fired += 1
        return True


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "faults.invalid")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2)).sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "faults-cert.pem", directory / "faults-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def soap_fault(fault: str, message: str) -> bytes:
    return (SOAP_HEAD + b"<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>" + message.encode()
            + b'</faultstring><detail><' + fault.encode() + b'Fault xmlns="urn:vim25" xsi:type="' + fault.encode()
            + b'"></' + fault.encode() + b"Fault></detail></soapenv:Fault>" + SOAP_TAIL)


class FaultProxy:
    def __init__(self, upstream_port: int, workdir: Path):
        self.upstream_port = upstream_port
        self.rules: list[Rule] = []
        self.seen: list[str] = []
        self._lock = threading.Lock()
        workdir.mkdir(parents=True, exist_ok=True)
        cert_file, key_file = self_signed(workdir)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert_file, key_file)
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}/sdk"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="fault-proxy", daemon=True)
        self._thread.start()

    def add(self, method: str, action: str, **params) -> Rule:
        rule = Rule(method, action, **params)
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()
            self.seen.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _rule_for(self, method: str) -> Rule | None:
        with self._lock:
            self.seen.append(method)
            for rule in self.rules:
                if rule.method == method and rule.take():
                    return rule
        return None

    # --- one client connection: requests until either side closes --------------------------------
    def _serve(self, raw: socket.socket) -> None:
        raw.settimeout(30)
        try:
            conn = self.tls.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            return
        upstream = http.client.HTTPSConnection("127.0.0.1", self.upstream_port, timeout=60,
                                               context=ssl._create_unverified_context())
        reader = conn.makefile("rb")
        try:
            while self._one(reader, conn, upstream):
                pass
        except (OSError, ssl.SSLError, http.client.HTTPException, ValueError):
            pass
        finally:
            upstream.close()
            try:
                conn.close()
            except OSError:
                pass

    def _one(self, reader, conn: ssl.SSLSocket, upstream: http.client.HTTPSConnection) -> bool:
        line = reader.readline(65536)
        if not line:
            return False
        verb, path, _version = line.decode("latin-1").split(" ", 2)
        headers = []
        while (header := reader.readline(65536)) not in (b"\r\n", b"\n", b""):
            key, _, value = header.decode("latin-1").partition(":")
            headers.append((key.strip(), value.strip()))
        length = int(dict((k.lower(), v) for k, v in headers).get("content-length") or 0)
        body = reader.read(length) if length else b""
        found = _METHOD.search(body)
        method = found.group(1).decode() if found else verb
        rule = self._rule_for(method)
        upstream.request(verb, path, body, {k: v for k, v in headers if k.lower() not in _HOP})
        answer = upstream.getresponse()
        data = answer.read()
        kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in _HOP]
        if rule is None:
            return _send(conn, answer.status, answer.reason, kept, data)
        return self._fault(rule, conn, answer.status, answer.reason, kept, data)

    def _fault(self, rule: Rule, conn, status: int, reason: str, headers: list, data: bytes) -> bool:
        other = [(k, v) for k, v in headers if k.lower() != "content-type"]
        xml = other + [("Content-Type", "text/xml; charset=utf-8")]
        action = rule.action
        if action == "cut":
            return _send(conn, status, reason, headers, data[:-rule.size], length=False)
        if action == "close":
            return _send(conn, status, reason, headers, data, length=False)
        if action == "cut-length":
            _send(conn, status, reason, headers + [("Content-Length", str(len(data)))], data[:-rule.size],
                  length=False)
            return False
        if action == "html":
            return _send(conn, rule.status, "Service Unavailable" if rule.status != 200 else "OK",
                         other + [("Content-Type", "text/html; charset=utf-8")], HTML)
        if action == "html-as-xml":
            return _send(conn, rule.status, "OK", xml, HTML)
        if action == "xhtml":
            return _send(conn, rule.status, "OK", xml, XHTML)
        if action == "not-envelope":
            return _send(conn, rule.status, "OK", xml, NOT_ENVELOPE)
        if action == "empty-envelope":
            return _send(conn, rule.status, "OK", xml, SOAP_HEAD + SOAP_TAIL)
        if action == "huge-fault":
            return _send(conn, 500, "Internal Server Error", xml, soap_fault("SystemError", "x" * rule.size))
        if action == "fault":
            return _send(conn, 500, "Internal Server Error", xml, soap_fault(rule.text, f"injected {rule.text}"))
        if action == "perf-value":
            return _send(conn, status, reason, headers, _replace_first(_SERIES_VALUE, data, rule.text))
        if action == "sample-time":
            return _send(conn, status, reason, headers, _replace_first(_SAMPLE_TIME, data, rule.text))
        if action == "trickle":
            head = _head(status, reason, headers + [("Content-Length", str(len(data)))])
            conn.sendall(head)
            for start in range(0, len(data), rule.size):
                time.sleep(rule.every)
                conn.sendall(data[start:start + rule.size])
            return True
        raise ValueError(f"unknown fault {action}")


_SERIES_VALUE = re.compile(rb"(<value>\s*<id>.*?</id>\s*<value>)([^,<]*)", re.S)
_SAMPLE_TIME = re.compile(rb"(<sampleInfoCSV>[^,<]*,)([^,<]*)")


def _replace_first(pattern: re.Pattern, data: bytes, text: str) -> bytes:
    """The pattern's first match's second group replaced: one bad value of one entity."""
    replaced, count = pattern.subn(lambda m: m.group(1) + text.encode(), data, count=1)
    if not count:
        raise ValueError(f"nothing matches {pattern.pattern!r} in the answer")
    return replaced


def _head(status: int, reason: str, headers: list) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _send(conn, status: int, reason: str, headers: list, data: bytes, length: bool = True) -> bool:
    """One answer; without ``length`` it is close-delimited (Connection: close, then the close)."""
    if length:
        conn.sendall(_head(status, reason, headers + [("Content-Length", str(len(data)))]) + data)
        return True
    conn.sendall(_head(status, reason, headers + [("Connection", "close")]) + data)
    return False


def thumbprint_of(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ssl._create_unverified_context().wrap_socket(raw) as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()
