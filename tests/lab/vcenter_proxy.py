"""The lab's vCenter: a TLS proxy on 127.0.0.1 in front of vcsim.

vcsim's performance values are random and cannot be set, so the lab's vCenter would contradict
the emulated ESXi hosts. This proxy forwards every HTTP request to vcsim unchanged, except
QueryPerf for the scenario VMs and hosts, which it answers itself from the lab's model (queryperf.py,
emulator/vcenter_perf.py). A QueryPerf mixing scenario entities and other entities is split: the other
querySpecs go to vcsim and its returnvals are put beside the proxy's. vcsim's certificate is
pinned by SHA-256; the proxy has its own self-signed certificate (``thumbprint``) for clients.

Bounded: at most MAX_CONNECTIONS client connections, each idle at most IDLE_TIMEOUT_S; request
bodies up to MAX_REQUEST bytes (Content-Length or chunked), vcsim's answers up to MAX_RESPONSE
bytes, each upstream call at most UPSTREAM_TIMEOUT_S.

Run by tests/lab/vcsim_lab.py (``start_proxy``) as its own process, like vcsim:

    python tests/lab/vcenter_proxy.py --upstream-port P --upstream-thumbprint SHA256 --model FILE --state FILE

MODEL (JSON, written by the lab): {"scenarios": path, "started": epoch, "counters": {id: name},
"vms": {moid: {"name", "device_keys"}}, "hosts": {moid: {"name"}}}. When listening it writes STATE {"port", "thumbprint",
"pid"}; it stops on SIGTERM/SIGINT, or by itself when the process that started it is gone.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import http.client
import http.server
import json
import os
import signal
import ssl
import sys
import threading
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import queryperf

MAX_CONNECTIONS = 32
IDLE_TIMEOUT_S = 120.0
UPSTREAM_TIMEOUT_S = 120.0
MAX_REQUEST = 16 * 1024 * 1024
MAX_RESPONSE = 64 * 1024 * 1024
MAX_LINE, MAX_TRAILERS, MAX_CHUNKS = 1024, 32, 65536
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
              "transfer-encoding", "upgrade", "host", "content-length"}
CERT_DAYS = 30


def self_signed(directory: Path) -> tuple[Path, Path, str]:
    """(cert file, key file, SHA-256 thumbprint of the certificate) for a new EC key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vcenter.lab.invalid")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=CERT_DAYS)).sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "proxy-cert.pem", directory / "proxy-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.touch(mode=0o600)
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file, hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


class _Upstream(http.client.HTTPSConnection):
    """A connection to vcsim that accepts only the certificate with the pinned SHA-256."""

    def __init__(self, port: int, thumbprint: str):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # pinned below instead
        super().__init__("127.0.0.1", port, timeout=UPSTREAM_TIMEOUT_S, context=context)
        self.thumbprint = thumbprint

    def connect(self) -> None:
        super().connect()
        seen = hashlib.sha256(self.sock.getpeercert(binary_form=True)).hexdigest()
        if seen != self.thumbprint:
            self.close()
            raise ssl.SSLError(f"vcsim certificate {seen} is not the pinned {self.thumbprint}")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = MAX_CONNECTIONS

    def __init__(self, proxy: "PerfProxy", context: ssl.SSLContext):
        self.proxy, self.context = proxy, context
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):  # full: refuse rather than queue without end
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            request.settimeout(IDLE_TIMEOUT_S)
            tls = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            self.shutdown_request(request)
            self.slots.release()
            return
        try:
            super().process_request_thread(tls, client_address)
        finally:
            self.slots.release()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.upstream = _Upstream(self.server.proxy.upstream_port, self.server.proxy.upstream_thumbprint)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.upstream.close()

    def log_message(self, format: str, *args) -> None:  # quiet: the lab's output is esxdiag's
        return

    def do_POST(self) -> None:
        self._relay()

    do_GET = do_PUT = do_DELETE = do_POST

    def _body(self) -> bytes | None:
        """The request body (Content-Length, or chunked as govc sends it); None past MAX_REQUEST.
        ValueError for a malformed or cut-off body."""
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 <= length <= MAX_REQUEST:
                return None
            body = self.rfile.read(length)
            if len(body) != length:
                raise ValueError("body cut off")
            return body
        chunks, total = [], 0
        for _ in range(MAX_CHUNKS):
            line = self.rfile.readline(MAX_LINE)
            size = int(line.split(b";", 1)[0].strip(), 16)  # ValueError on EOF or garbage
            total += size
            if size < 0 or total > MAX_REQUEST:
                return None
            if size == 0:
                for _ in range(MAX_TRAILERS):  # trailers, up to the empty line
                    if self.rfile.readline(MAX_LINE) in (b"\r\n", b"\n", b""):
                        return b"".join(chunks)
                return None
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.readline(MAX_LINE).strip():
                raise ValueError("chunk cut off")
            chunks.append(chunk)
        return None

    def _relay(self) -> None:
        try:
            body = self._body()
        except ValueError:
            return self._error(400, "bad Content-Length or chunk size")
        if body is None:
            return self._error(413, "request too large for the lab's vCenter proxy")
        specs = queryperf.parse_request(body) if self.command == "POST" else None
        try:
            if specs and any(queryperf.is_modelled(self.server.proxy.model, s) for s in specs):
                return self._query_perf(body, specs)
            self._reply(*self._forward(body))
        except (OSError, http.client.HTTPException) as exc:
            self.upstream.close()
            self._error(502, f"the lab's vCenter proxy could not reach vcsim: {exc}")

    def _forward(self, body: bytes, drop: tuple[str, ...] = ()) -> tuple[int, bytes, list[tuple[str, str]]]:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP.union(drop)}
        self.upstream.request(self.command, self.path, body=body if body or self.command == "POST" else None,
                              headers=headers)
        answer = self.upstream.getresponse()
        data = answer.read(MAX_RESPONSE + 1)
        if len(data) > MAX_RESPONSE:
            self.upstream.close()
            self.close_connection = True
            return 502, b"vcsim's answer is larger than the lab's vCenter proxy reads", [("Content-Type", "text/plain")]
        if answer.will_close:
            self.upstream.close()
        return answer.status, data, [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP]

    def _query_perf(self, body: bytes, specs: list[queryperf.Spec]) -> None:
        model = self.server.proxy.model
        local = [queryperf.is_modelled(model, s) for s in specs]
        parts: list[str | bytes] = [queryperf.answer(model, s) for s, mine in zip(specs, local) if mine]
        if not all(local):
            rest = queryperf.without_specs(body, [not mine for mine in local])
            if rest is None:
                return self._error(500, "the lab's vCenter proxy could not split this QueryPerf")
            status, data, headers = self._forward(rest, drop=("accept-encoding",))
            if status != 200:  # a fault for vcsim's part fails the whole call, as one server would
                return self._reply(status, data, headers)
            parts += queryperf.returnvals(data)
        self._reply(200, queryperf.response(parts), [("Content-Type", "text/xml; charset=utf-8")])

    def _error(self, status: int, text: str) -> None:
        self.close_connection = True  # the request may not have been read to its end
        self._reply(status, text.encode(), [("Content-Type", "text/plain; charset=utf-8")])

    def _reply(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class PerfProxy:
    """The proxy in a daemon thread; ``port`` and ``thumbprint`` are what clients use."""

    def __init__(self, upstream_port: int, upstream_thumbprint: str, model: queryperf.Model, workdir: Path):
        self.upstream_port, self.upstream_thumbprint, self.model = upstream_port, upstream_thumbprint, model
        workdir.mkdir(parents=True, exist_ok=True)
        cert_file, key_file, self.thumbprint = self_signed(workdir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        self._server = _Server(self, context)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="lab-vcenter-proxy", daemon=True)

    def start(self) -> "PerfProxy":
        self._thread.start()
        return self

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 10) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=timeout_s)
        self._server.server_close()


def load_model(path: Path) -> queryperf.Model:
    doc = json.loads(path.read_text())
    scenarios = json.loads(Path(doc["scenarios"]).read_text())
    scenario = {vm["name"]: vm for vm in scenarios["vms"]}
    vms = {moid: (scenario[vm["name"]], list(vm["device_keys"])) for moid, vm in doc["vms"].items()}
    host_by_name = {host["name"]: host for host in scenarios["hosts"]}
    hosts = {moid: host_by_name[host["name"]] for moid, host in doc.get("hosts", {}).items()}
    return queryperf.Model({int(k): v for k, v in doc["counters"].items()}, vms, float(doc["started"]), hosts)


def _stop_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--upstream-thumbprint", required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--state", type=Path, required=True)
    ns = parser.parse_args(argv)
    parent = os.getppid()
    signal.signal(signal.SIGTERM, _stop_on_signal)
    proxy = PerfProxy(ns.upstream_port, ns.upstream_thumbprint.lower(), load_model(ns.model), ns.state.parent)
    proxy.start()
    try:
        staging = ns.state.with_suffix(".tmp")
        staging.write_text(json.dumps({"port": proxy.port, "thumbprint": proxy.thumbprint, "pid": os.getpid()}))
        staging.replace(ns.state)
        while os.getppid() == parent and proxy.alive():
            time.sleep(0.5)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
