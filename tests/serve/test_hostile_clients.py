"""serve's web side against clients that do not play fair, on 127.0.0.1: a request body never
becomes a second request; odd names under /deep/ are a 404; connections are bounded (one more is
answered 503), the listen backlog is an exporter's, and a connection that sends its request slowly
or not at all is closed after the idle timeout."""

from __future__ import annotations

import http.client
import socket
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from esxdiag.config import load_thresholds
from esxdiag.serve.pages import Pages
from esxdiag.serve.web import WebServer
from esxdiag.serve.webconfig import WebConfig


def exchange(server, raw: bytes, wait_s: float = 1.0) -> bytes:
    """Send raw bytes on one connection; everything answered until it closes or is quiet for wait_s."""
    with socket.create_connection(server.server_address[:2], timeout=wait_s) as sock:
        sock.sendall(raw)
        received = b""
        for _ in range(1000):
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            received += chunk
        return received


def test_a_request_body_is_discarded_never_a_second_request(web_server):
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    answer = exchange(web_server, b"GET /favicon.ico HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(smuggled), smuggled))
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 204")
    for headers, status in ((b"Transfer-Encoding: chunked\r\n", b"400"), (b"Content-Length: 99999999\r\n", b"413"),
                            (b"Content-Length: 1\r\nContent-Length: 34\r\n", b"400"), (b"Content-Length: -3\r\n", b"400")):
        answer = exchange(web_server, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n" + smuggled)
        assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 " + status), answer
    answer = exchange(web_server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(smuggled), smuggled))
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 405")


@pytest.mark.parametrize("path", ["/deep/%00", "/deep/a%00b/report.html", "/deep/" + "a" * 300,
                                  "/deep/" + "/".join(["b" * 250] * 30)])
def test_odd_names_under_deep_are_not_found(web_server, path):
    answer = exchange(web_server, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 404") and answer.endswith(b"not found\n")


@pytest.fixture
def small_server(web_server):
    """A server over the web_server fixture's pages, with 3 connections at most and a 1 s idle timeout."""
    server = WebServer("127.0.0.1", 0, web_server.pages, web_server.metrics, web_server.deep_root, WebConfig(),
                       max_connections=3, idle_timeout_s=1.0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def metrics_status(server) -> int:
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_connections_are_bounded_and_slow_ones_closed_after_the_idle_timeout(small_server):
    assert small_server.socket.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
    assert WebServer.request_queue_size >= 128
    slow = [socket.create_connection(small_server.server_address[:2], timeout=5) for _ in range(3)]
    time.sleep(0.3)
    assert metrics_status(small_server) == 503  # the fourth connection: busy, answered at once
    started = time.monotonic()
    for _ in range(8):  # a byte every 0.25 s: alive to a per-read timeout, not to the idle timeout
        for sock in slow:
            try:
                sock.send(b"G")
            except OSError:
                pass
        time.sleep(0.25)
    closed = 0
    for sock in slow:
        try:
            closed += sock.recv(100) == b""
        except OSError:
            closed += 1
        sock.close()
    assert closed == 3 and time.monotonic() - started < 4
    assert metrics_status(small_server) == 200
    started = time.monotonic()  # a kept-alive connection idle past the timeout after its answer: closed
    answer = exchange(small_server, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", wait_s=5)
    assert answer.startswith(b"HTTP/1.1 200") and answer.count(b"HTTP/1.1 ") == 1
    assert 1 <= time.monotonic() - started < 3


def test_metrics_answers_beside_many_slow_sockets(web_server):
    slow = [socket.create_connection(web_server.server_address[:2], timeout=5) for _ in range(100)]
    try:
        for sock in slow:
            sock.send(b"GET /metrics HTTP/1.1\r\n")
        times = []
        for _ in range(20):
            started = time.monotonic()
            assert metrics_status(web_server) == 200
            times.append(time.monotonic() - started)
        assert max(times) < 1
    finally:
        for sock in slow:
            sock.close()
