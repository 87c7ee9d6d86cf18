"""TLS and basic auth for serve's web side, configured as Prometheus exporters are (the
exporter-toolkit web configuration file, `--web-config FILE`):

    tls_server_config:
      cert_file: /etc/esxdiag/serve.crt      # relative paths are relative to this file
      key_file: /etc/esxdiag/serve.key
      min_version: TLS12                     # optional: TLS12 (default) or TLS13
    basic_auth_users:
      prometheus: $2y$10$...                 # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\\n')

Anything else in the file is refused, naming the key, rather than silently ignored; so are the file
(with users) and the TLS key file when group or other may read them, as the config file holding a
password is. Passwords are
checked with bcrypt.checkpw (constant-time); an unknown user is checked against a dummy hash of the
configured hashes' highest cost, so the time taken does not tell which users exist. A password over
bcrypt's 72 bytes is refused (401) after the same check of its first 72 bytes. Neither passwords nor hashes are ever logged.

Wrong passwords cannot multiply the cost of a check (PasswordChecks, as the Prometheus exporter
toolkit does): one bcrypt check runs at a time in the process, so clients sending wrong passwords
use at most one core however many they are; and the outcome of each (user, password) checked is
remembered under a keyed hash (HMAC-SHA256 with a per-process random key; never the password), so a
scraper sending the right password again costs no check at all, and one wrong password sent again
costs none either. What a remembered answer shows in its time (the same credentials were checked
before) is what the client sent itself; a known and an unknown user are remembered alike.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import re
import secrets
import ssl
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import yaml

from esxdiag.collectors.credentials import shared_secret
from esxdiag.errors import EsxdiagError

BCRYPT_HASH = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")
TLS_KEYS = {"cert_file", "key_file", "min_version"}
TLS_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
BCRYPT_MAX_BYTES = 72  # bcrypt reads no further (bcrypt 5 raises beyond it)
_DUMMIES: dict[int, bytes] = {}  # by cost: a hash to check unknown users against, made on first use
CHECKS_AT_ONCE = 1  # bcrypt checks running at once in the process (the exporter toolkit's bcrypt mutex)
REMEMBERED_PASSED = 64  # (user, password) pairs that passed, kept: the scrapers' own
REMEMBERED_FAILED = 4096  # pairs that failed, kept apart: failures never evict a scraper's pair


class WebConfigError(EsxdiagError):
    """The web configuration file is unreadable or asks for what esxdiag does not do (exit 2)."""


class PasswordChecks:
    """Callable: an Authorization header -> whether it carries a configured user's password, at a
    bounded cost (the module's docstring)."""

    def __init__(self, users: dict[str, bytes]):
        self.users = users
        self._key = secrets.token_bytes(32)
        self._gate = threading.Semaphore(CHECKS_AT_ONCE)
        self._lock = threading.Lock()
        self._passed: OrderedDict[bytes, None] = OrderedDict()
        self._failed: OrderedDict[bytes, None] = OrderedDict()

    def _remembered(self, key: bytes) -> bool | None:
        with self._lock:
            for known, answer in ((self._passed, True), (self._failed, False)):
                if key in known:
                    known.move_to_end(key)
                    return answer
        return None

    def _remember(self, key: bytes, ok: bool) -> None:
        known, size = (self._passed, REMEMBERED_PASSED) if ok else (self._failed, REMEMBERED_FAILED)
        with self._lock:
            known[key] = None
            while len(known) > size:
                known.popitem(last=False)

    def __call__(self, header: str | None) -> bool:
        if not self.users:
            return True
        sent = credentials(header)
        if sent is None:
            return False
        key = hmac.new(self._key, sent[0].encode("utf-8") + b"\0" + sent[1], hashlib.sha256).digest()
        answer = self._remembered(key)
        if answer is not None:
            return answer
        with self._gate:
            answer = self._remembered(key)  # checked by another client while this one waited
            if answer is None:
                answer = password_ok(*sent, self.users)
                self._remember(key, answer)
        return answer


@dataclass(frozen=True)
class WebConfig:
    tls: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict, repr=False)  # name -> bcrypt hash
    checks: PasswordChecks = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "checks", PasswordChecks(self.users))

    @property
    def secure(self) -> bool:
        """Both TLS and basic auth: what binding anything but loopback requires."""
        return self.tls is not None and bool(self.users)


def load_web_config(path: Path | None) -> WebConfig:
    if path is None:
        return WebConfig()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        shared = shared_secret(path, "password hashes")
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise WebConfigError(f"{path}: cannot read the web config ({type(exc).__name__})") from None
    data = data or {}
    if not isinstance(data, dict):
        raise WebConfigError(f"{path}: the web config must be a YAML mapping")
    if shared and data.get("basic_auth_users"):
        raise WebConfigError(f"web config {shared}")
    unknown = sorted(set(data) - {"tls_server_config", "basic_auth_users"})
    if unknown:
        raise WebConfigError(f"{path}: unsupported key(s) {', '.join(map(str, unknown))} (esxdiag reads "
                             "tls_server_config: cert_file, key_file, min_version; and basic_auth_users)")
    return WebConfig(_tls(path, data.get("tls_server_config")), _users(path, data.get("basic_auth_users")))


def _tls(path: Path, section) -> ssl.SSLContext | None:
    if section is None:
        return None
    if not isinstance(section, dict) or not {"cert_file", "key_file"} <= set(section) or set(section) - TLS_KEYS:
        raise WebConfigError(f"{path}: tls_server_config needs cert_file and key_file (and at most min_version)")
    version = section.get("min_version", "TLS12")
    if version not in TLS_VERSIONS:
        raise WebConfigError(f"{path}: tls_server_config.min_version must be TLS12 or TLS13, not {version!r}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = TLS_VERSIONS[version]
    cert, key = (path.parent / str(section[k]) for k in ("cert_file", "key_file"))
    try:
        shared = shared_secret(key, "a private key")
        if shared:
            raise WebConfigError(f"TLS key file {shared}")
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise WebConfigError(f"{path}: cannot load {cert} / {key}: {exc}") from None
    return context


def _users(path: Path, section) -> dict[str, bytes]:
    if section is None:
        return {}
    if not isinstance(section, dict) or not section:
        raise WebConfigError(f"{path}: basic_auth_users must map user names to bcrypt hashes")
    users = {}
    for name, hashed in section.items():
        if not isinstance(hashed, str) or not BCRYPT_HASH.fullmatch(hashed) or not 4 <= int(hashed[4:6]) <= 31:
            raise WebConfigError(f"{path}: basic_auth_users.{name}: not a bcrypt hash ($2y$10$... ; plain "
                                 "passwords are refused)")
        users[str(name)] = hashed.encode()
    return users


def authorized(header: str | None, users: dict[str, bytes]) -> bool:
    """Whether an Authorization header carries a configured user's password (always, with no users)."""
    if not users:
        return True
    sent = credentials(header)
    return sent is not None and password_ok(*sent, users)


def credentials(header: str | None) -> tuple[str, bytes] | None:
    """(user, password) of a Basic Authorization header; None when it is not one."""
    scheme, _, token = (header or "").partition(" ")
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if scheme.lower() != "basic" or not sep:
        return None
    return user, password.encode("utf-8")


def password_ok(user: str, secret: bytes, users: dict[str, bytes]) -> bool:
    """One bcrypt check: a known user's hash, else the dummy of the same cost."""
    ok = bcrypt.checkpw(secret[:BCRYPT_MAX_BYTES], users.get(user) or dummy_hash(users))
    return ok and user in users and len(secret) <= BCRYPT_MAX_BYTES


def dummy_hash(users: dict[str, bytes]) -> bytes:
    """A hash of the configured hashes' highest cost: an unknown user costs what a known one does."""
    cost = max(int(hashed[4:6]) for hashed in users.values())
    if cost not in _DUMMIES:
        _DUMMIES[cost] = bcrypt.hashpw(b"not a password", bcrypt.gensalt(cost))
    return _DUMMIES[cost]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT, [IPv6]:PORT or :PORT (every address) -> (host, port)."""
    match = re.fullmatch(r"(?:\[([0-9A-Fa-f:.]+)\]|([^:\[\]]*)):(\d{1,5})", text)
    if not match or not 0 <= int(match[3]) < 65536:  # 0: any free port (tests)
        raise EsxdiagError(f"--listen {text!r}: expected HOST:PORT, [IPv6]:PORT or :PORT")
    return match[1] or match[2] or "", int(match[3])
