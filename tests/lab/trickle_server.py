"""A peer that never finishes answering: a TLS server on 127.0.0.1 that accepts, reads the
request and then sends its HTTP response one byte every ``interval_s`` seconds.

Used to prove that esxdiag's vCenter calls have an overall deadline (a per-read timeout never
fires against it). Every connection ends by itself after ``limit_s``; ``stop()`` ends them all.

    python tests/lab/trickle_server.py [--interval 1] [--limit 300]   # prints its port, Ctrl-C stops
"""

from __future__ import annotations

import datetime
import socket
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 65536\r\n\r\n"
            + b"<?xml version=\"1.0\"?>" + b" " * 65515)


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "trickle.invalid")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


class TrickleServer:
    def __init__(self, interval_s: float = 1.0, limit_s: float = 120.0):
        self.interval_s, self.limit_s = interval_s, limit_s
        self._dir = tempfile.TemporaryDirectory(prefix="esxdiag-trickle-")
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(*_self_signed(Path(self._dir.name)))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.bytes_sent = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(worker)
            worker.start()

    def _serve(self, conn: socket.socket) -> None:
        deadline = time.monotonic() + self.limit_s
        try:
            conn.settimeout(10)
            with self.context.wrap_socket(conn, server_side=True) as tls:
                request = b""
                while b"\r\n\r\n" not in request and len(request) < 65536:
                    chunk = tls.recv(4096)
                    if not chunk:
                        return
                    request += chunk
                for byte in RESPONSE:
                    if self._stop.wait(self.interval_s) or time.monotonic() > deadline:
                        return
                    tls.sendall(bytes([byte]))
                    self.bytes_sent += 1
        except (OSError, ssl.SSLError):
            return
        finally:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self.listener.close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._dir.cleanup()


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--limit", type=float, default=300.0)
    args = parser.parse_args(argv)
    server = TrickleServer(args.interval, args.limit)
    print(f"trickling on https://127.0.0.1:{server.port}/sdk (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
