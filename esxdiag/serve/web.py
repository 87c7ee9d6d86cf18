"""serve's HTTP(S) side: read-only, stdlib http.server, one thread per connection.

    /                    the fleet page (every vCenter's last cycle)    /fleet.json .csv .txt  the same report
    /vm/VCENTER/MOID     a VM's page                                    /deep/...              deep-check reports
    /metrics             Prometheus (text or OpenMetrics, gzip)         /healthz               JSON, 200

GET and HEAD only. With a web config (esxdiag.serve.webconfig) the socket speaks TLS (the
handshake runs in the connection's own thread, so a slow client holds only its own) and every
path needs basic auth. Each connection times out after CONNECTION_TIMEOUT_S idle.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import socket
import ssl
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from esxdiag.reports.formats import FLEET
from esxdiag.serve.pages import FLEET_FILES, Pages
from esxdiag.serve.webconfig import WebConfig, authorized

log = logging.getLogger("esxdiag.serve.web")
CONNECTION_TIMEOUT_S = 30
GZIP_MIN_BYTES = 1024
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".json": "application/json"}  # else text/plain
HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


class WebServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, pages: Pages, registry: CollectorRegistry, deep_root: Path,
                 web: WebConfig):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.pages, self.registry, self.deep_root, self.web = pages, registry, deep_root.resolve(), web
        super().__init__((host, port), Handler)

    def get_request(self):
        sock, address = super().get_request()
        if self.web.tls is not None:  # handshake later, in the connection's thread (Handler.setup)
            sock = self.web.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request, client_address) -> None:
        log.debug("connection from %s ended in an error", client_address[0], exc_info=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.web.tls else 'http'}://{shown}:{port}/"


class Handler(BaseHTTPRequestHandler):
    server: WebServer
    server_version = "esxdiag"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    timeout = CONNECTION_TIMEOUT_S
    _headers_sent = False

    def setup(self) -> None:
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()

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

    def _refuse(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"read-only: GET and HEAD\n", "text/plain", False,
                   {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _answer(self, head: bool) -> None:
        if not authorized(self.headers.get("Authorization"), self.server.web.users):
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
            encoder, media_type = choose_encoder(self.headers.get("Accept", ""))
            self._send(HTTPStatus.OK, encoder(self.server.registry), media_type, head)
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
        target = (root / relative).resolve()
        if not target.is_relative_to(root) or not target.is_file():
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
