"""serve's HTTP(S) side: read-only, stdlib http.server, one thread per connection.

    /                    the fleet page (every vCenter's last cycle)    /fleet.json .csv .txt  the same report
    /vm/VCENTER/MOID     a VM's page                                    /deep/...              deep-check reports
    /metrics             Prometheus (text or OpenMetrics, gzip)         /healthz               JSON, 200

GET and HEAD only; a request body is read and discarded (refused when chunked or over
MAX_BODY_BYTES). With a web config (esxdiag.serve.webconfig) the socket speaks TLS (the handshake
runs in the connection's own thread, so a slow client holds only its own) and every path needs
basic auth. Connections are bounded (MAX_CONNECTIONS, then 503) and closed when they wait longer
than IDLE_TIMEOUT_S for a complete request.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import shutil
import socket
import ssl
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from esxdiag.reports.formats import FLEET
from esxdiag.serve.metrics import Exposition
from esxdiag.serve.pages import FLEET_FILES, Pages
from esxdiag.serve.webconfig import WebConfig

log = logging.getLogger("esxdiag.serve.web")
IDLE_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 512
LISTEN_BACKLOG = 128
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n"
GZIP_MIN_BYTES = 1024
MAX_BODY_BYTES = 65536  # GET and HEAD carry none; a bigger one is refused (413)
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".json": "application/json"}  # else text/plain
HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


class WebServer(ThreadingHTTPServer):
    """A thread per connection, at most ``max_connections`` of them (one more is answered 503 and
    closed); a connection waiting longer than ``idle_timeout_s`` for its next request (a TLS
    handshake, a request line and headers, sent slowly or not at all) is closed."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, host: str, port: int, pages: Pages, metrics: Exposition, deep_root: Path,
                 web: WebConfig, max_connections: int = MAX_CONNECTIONS, idle_timeout_s: float = IDLE_TIMEOUT_S):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.pages, self.metrics, self.deep_root, self.web = pages, metrics, deep_root.resolve(), web
        self.idle_timeout_s = idle_timeout_s
        self.max_connections, self.slots = max_connections, threading.BoundedSemaphore(max_connections)
        self.waiting: dict[int, tuple[float, socket.socket]] = {}  # connections waiting for a request
        self.waiting_lock = threading.Lock()
        self.stopping = threading.Event()
        self.busy_logged = float("-inf")
        super().__init__((host, port), Handler)

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        threading.Thread(target=self._close_idle, name="web-idle", daemon=True).start()
        super().serve_forever(poll_interval)

    def shutdown(self) -> None:
        self.stopping.set()
        super().shutdown()

    def wait_for_request(self, sock: socket.socket) -> None:
        with self.waiting_lock:
            self.waiting[id(sock)] = (time.monotonic() + self.idle_timeout_s, sock)

    def request_received(self, sock: socket.socket) -> None:
        with self.waiting_lock:
            self.waiting.pop(id(sock), None)

    def _close_idle(self) -> None:
        while not self.stopping.wait(min(1.0, self.idle_timeout_s / 4)):
            now = time.monotonic()
            with self.waiting_lock:
                late = [sock for deadline, sock in self.waiting.values() if deadline < now]
            for sock in late:
                self.request_received(sock)
                try:
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: also under TLS
                except OSError:
                    pass  # already gone

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(blocking=False):
            if time.monotonic() - self.busy_logged > 60:  # a line a minute at most, under a flood too
                self.busy_logged = time.monotonic()
                log.warning("%s: refused, already %d connections (--web-max-connections)", client_address[0],
                            self.max_connections)
            if not isinstance(request, ssl.SSLSocket):
                try:
                    request.setblocking(False)
                    request.send(BUSY)
                except OSError:
                    pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.request_received(request)
            self.slots.release()

    def get_request(self):
        sock, address = super().get_request()
        if self.web.tls is not None:  # handshake later, in the connection's thread (Handler.setup)
            sock = self.web.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request, client_address) -> None:
        log.debug("connection from %s ended in an error", client_address[0], exc_info=True)

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]  # an IP address: never bytes for TCP
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.web.tls else 'http'}://{shown}:{port}/"


class Handler(BaseHTTPRequestHandler):
    server: WebServer
    server_version = "esxdiag"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    _headers_sent = False

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout_s  # type: ignore[misc]  # each read and write; the whole wait: WebServer._close_idle
        self.server.wait_for_request(self.request)
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()

    def handle_one_request(self) -> None:
        self.server.wait_for_request(self.request)
        super().handle_one_request()

    def log_message(self, format: str, *args) -> None:  # the request line; never a header
        log.debug("%s %s", self.client_address[0], format % args)

    def do_GET(self) -> None:
        self._guarded(head=False)

    def do_HEAD(self) -> None:
        self._guarded(head=True)

    def _guarded(self, head: bool) -> None:
        """An answer whatever happens: a bug or an unreadable history is a 500 with one line, never a
        connection closed without one."""
        self._headers_sent = False
        if not self._body_read(head):
            return
        try:
            self._answer(head)
        except (ConnectionError, TimeoutError, ssl.SSLError):
            raise
        except Exception as exc:
            log.exception("GET %s: internal error (%s)", self.path, type(exc).__name__)
            if not self._headers_sent:
                self.close_connection = True
                self._send(HTTPStatus.INTERNAL_SERVER_ERROR, b"internal error (see serve's log)\n", "text/plain",
                           head, {"Connection": "close"})

    def _body_read(self, head: bool) -> bool:
        """Read and discard the request's body, so that it never becomes a second request on the
        connection; one that cannot be read so (chunked, too big, a bad length) is refused and the
        connection closed. Then the request is complete: no longer subject to the idle timeout."""
        lengths = self.headers.get_all("Content-Length") or ["0"]
        refusal = None
        if self.headers.get("Transfer-Encoding") is not None:
            refusal = HTTPStatus.BAD_REQUEST, b"request bodies with Transfer-Encoding are refused\n"
        elif len(set(lengths)) != 1 or not re.fullmatch(r"[0-9]{1,12}", lengths[0].strip()):
            refusal = HTTPStatus.BAD_REQUEST, b"bad Content-Length\n"
        elif int(lengths[0]) > MAX_BODY_BYTES:
            refusal = HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"request body too large\n"
        if refusal is not None:
            self.close_connection = True
            self._send(*refusal, "text/plain", head, {"Connection": "close"})
            return False
        self.rfile.read(int(lengths[0]))
        self.server.request_received(self.request)
        return True

    def _refuse(self) -> None:
        self._headers_sent = False
        if not self._body_read(head=False):
            return
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"read-only: GET and HEAD\n", "text/plain", False,
                   {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _answer(self, head: bool) -> None:
        if not self.server.web.checks(self.headers.get("Authorization")):
            self._send(HTTPStatus.UNAUTHORIZED, b"unauthorized\n", "text/plain", head,
                       {"WWW-Authenticate": 'Basic realm="esxdiag"'})
            return
        path = urlsplit(self.path).path
        pages = self.server.pages
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, pages.fleet("html"), FLEET.formats["html"].media_type, head)
        elif path.lstrip("/") in FLEET_FILES:
            fmt = FLEET_FILES[path.lstrip("/")]
            self._send(HTTPStatus.OK, pages.fleet(fmt), FLEET.formats[fmt].media_type, head)
        elif path == "/metrics":
            body, media_type = self.server.metrics.render(self.headers.get("Accept", ""))
            self._send(HTTPStatus.OK, body, media_type, head)
        elif path == "/healthz":
            self._send(HTTPStatus.OK, json.dumps(pages.health()).encode() + b"\n", "application/json", head)
        elif path.startswith("/vm/") and path.count("/") == 3:
            _, _, vcenter, moid = (unquote(p) for p in path.split("/"))
            page = pages.vm(vcenter, moid)
            if page is None:
                self._send(HTTPStatus.NOT_FOUND, b"no such VM in the last cycles or the history\n", "text/plain", head)
            else:
                self._send(HTTPStatus.OK, page, "text/html; charset=utf-8", head)
        elif path.startswith("/deep/"):
            self._static(unquote(path[len("/deep/"):]), head)
        elif path == "/favicon.ico":  # browsers ask; there is none
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon", head)
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain", head)

    def _static(self, relative: str, head: bool) -> None:
        """A file under the deep-check folder: never outside it (.., symlinks), never a listing."""
        root = self.server.deep_root
        try:
            target = (root / relative).resolve()
            found = target.is_relative_to(root) and target.is_file()
        except (OSError, ValueError):  # a NUL byte, a name too long for the file system
            found = False
        if not found:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain", head)
            return
        media_type = STATIC_TYPES.get(target.suffix, "text/plain; charset=utf-8")
        with open(target, "rb") as fh:
            size = target.stat().st_size
            self._head(HTTPStatus.OK, media_type, size, {})
            if not head:
                shutil.copyfileobj(fh, self.wfile)

    def _send(self, status: HTTPStatus, body: bytes, media_type: str, head: bool, extra: dict | None = None) -> None:
        extra = {"Vary": "Accept-Encoding", **(extra or {})}
        if len(body) >= GZIP_MIN_BYTES and "gzip" in self.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body, compresslevel=5)
            extra["Content-Encoding"] = "gzip"
        self._head(status, media_type, len(body), extra)
        if not head:
            self.wfile.write(body)

    def _head(self, status: HTTPStatus, media_type: str, length: int, extra: dict) -> None:
        self._headers_sent = True
        self.send_response(status)
        body = {"Content-Type": media_type, "Content-Length": str(length)} if status != HTTPStatus.NO_CONTENT else {}
        for name, value in {**HEADERS, **body, **extra}.items():
            self.send_header(name, value)
        self.end_headers()
