"""SSH transport for ESXi hosts and guests (paramiko).

Only commands named in esxdiag.specs can be sent: ``SshConnection.run_spec`` renders the spec
(params validated and shell-quoted there) and refuses specs of another target kind. There is no
public method that runs an arbitrary string.

Host keys are verified against known_hosts (the user's file, or an explicit one, plus esxdiag's
own file); unknown keys are refused unless ``accept_new_host_keys``, which stores the key in
esxdiag's own file only. One TCP connection per host, created here with TCP_NODELAY (paramiko
leaves Nagle on, which stalls every exec ~40 ms), one channel at a time.
"""

from __future__ import annotations

import base64
import hashlib
import os
import select
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

import paramiko

from esxdiag import specs
from esxdiag.bundle import utcnow
from esxdiag.errors import CollectionError

DEFAULT_COMMAND_TIMEOUT_S = specs.DEFAULT_COMMAND_TIMEOUT_S
STDERR_KEEP_BYTES = 64 * 1024  # stderr past this is read and dropped: only its first line is ever shown
_KINDS = (specs.ESXI, specs.LINUX, specs.WINDOWS)
_ESXI_SSH_HINT = ("SSH is disabled by default on ESXi: enable the SSH service on the host "
                  "(Host > Actions > Services > Enable Secure Shell) for the collection window")

# (elapsed, timeout) -> True to stop the command now: its output so far is the result (rc None)
OnWait = Callable[[float, float], "bool | None"]


def default_own_known_hosts() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "esxdiag" / "known_hosts"


@dataclass(frozen=True)
class SshTarget:
    user: str
    host: str
    port: int = 22

    @classmethod
    def parse(cls, text: str) -> "SshTarget":
        """``USER@HOST[:PORT]``; an IPv6 host goes in brackets: ``root@[fe80::1]:2222``."""
        user, sep, rest = text.rpartition("@")
        if not sep or not user or not rest:
            raise ValueError(f"expected USER@HOST[:PORT], got {text!r}")
        port = "22"
        if rest.startswith("["):
            host, bracket, tail = rest[1:].partition("]")
            if not bracket or (tail and not tail.startswith(":")):
                raise ValueError(f"bad bracketed host in {text!r}")
            port = tail[1:] or port
        elif rest.count(":") == 1:
            host, port = rest.split(":")
        elif ":" in rest:
            raise ValueError(f"an IPv6 address needs brackets: USER@[ADDR]:PORT, got {text!r}")
        else:
            host = rest
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bad host or port in {text!r}")
        return cls(user, host, int(port))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{self.port}"


@dataclass(frozen=True)
class SshOptions:
    key_file: Path | None = None
    known_hosts: Path | None = None  # read-only; default ~/.ssh/known_hosts
    own_known_hosts: Path | None = None  # esxdiag's file, the only one ever written
    accept_new_host_keys: bool = False
    password: str | None = None  # from the environment or a prompt, never argv
    connect_timeout_s: float = 10.0
    command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S
    tcp_nodelay: bool = True  # off only to measure what it buys (bench/ssh_bench.py)
    output_cap_bytes: int | None = None  # replaces every spec's own output cap (--output-cap)

    def __repr__(self) -> str:  # keep the password out of logs and tracebacks
        return (f"SshOptions(key_file={self.key_file!r}, known_hosts={self.known_hosts!r}, "
                f"own_known_hosts={self.own_known_hosts!r}, accept_new_host_keys={self.accept_new_host_keys}, "
                f"password={'***' if self.password else None}, connect_timeout_s={self.connect_timeout_s}, "
                f"command_timeout_s={self.command_timeout_s}, tcp_nodelay={self.tcp_nodelay}, "
                f"output_cap_bytes={self.output_cap_bytes})")


@dataclass(frozen=True)
class CommandResult:
    command: str
    stdout: bytes  # empty when the output was streamed to a file (``out``)
    stderr: bytes
    rc: int | None
    started: str
    ended: str
    error_kind: str | None = None
    error: str | None = None
    size: int = 0  # stdout bytes kept (in ``stdout`` or in the file)

    @property
    def ok(self) -> bool:
        return self.error_kind is None


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style ``SHA256:...`` fingerprint."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


class _UnknownHostKey(paramiko.MissingHostKeyPolicy):
    """Refuse an unknown host, or (opted in) store its key in esxdiag's own known_hosts."""

    def __init__(self, label: str, accept: bool, store: Path, searched: list[Path]):
        self.label, self.accept, self.store, self.searched = label, accept, store, searched

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        offered = f"{key.get_name()} {fingerprint(key)}"
        if not self.accept:
            where = (f"not in {', '.join(str(p) for p in self.searched)}" if self.searched
                     else "no known_hosts file exists")
            raise CollectionError(
                f"{self.label}: unknown host key {offered} ({where}); nothing was run. Check the fingerprint "
                "on the host (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), then "
                f"run again with --accept-new-host-keys (stored in {self.store})", kind="host-key")
        self.store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.store, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="ascii") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)


class SshConnection:
    """One authenticated SSH connection to one host or guest of a known target kind."""

    def __init__(self, target: SshTarget, kind: str, options: SshOptions | None = None):
        if kind not in _KINDS:
            raise ValueError(f"target kind must be one of {_KINDS}, got {kind!r}")
        self.target, self.kind = target, kind
        self.options = options or SshOptions()
        self._client: paramiko.SSHClient | None = None
        self.unavailable: dict[str, str] = {}  # program -> why its captures are skipped (preflight)
        self._stopped_one = False  # the last command was stopped by us (its cap or its deadline)
        self.notes: list[str] = []  # what happened to the connection itself (a reconnect), for the manifest

    def __enter__(self) -> "SshConnection":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """The next command can be sent: the connection is up, or it ended right after we stopped a
        command and will be opened again once (see ``_exec``)."""
        return self._transport_active() or (self._stopped_one and self._client is not None)

    def _transport_active(self) -> bool:
        transport = self._client.get_transport() if self._client else None
        return bool(transport and transport.is_active())

    def connect(self) -> "SshConnection":
        opts, label = self.options, str(self.target)
        sock = self._open_socket()
        client = paramiko.SSHClient()
        user_file = opts.known_hosts or Path(os.path.expanduser("~/.ssh/known_hosts"))
        own_file = opts.own_known_hosts or default_own_known_hosts()
        searched = [p for p in (user_file, own_file) if p.is_file()]
        try:
            if user_file.is_file():
                client.load_system_host_keys(str(user_file))
            if own_file.is_file():
                client.load_host_keys(str(own_file))
        except (OSError, paramiko.SSHException) as exc:
            sock.close()
            raise CollectionError(f"{label}: cannot read known_hosts: {exc}", kind="host-key") from None
        client.set_missing_host_key_policy(_UnknownHostKey(label, opts.accept_new_host_keys, own_file, searched))
        try:
            client.connect(
                self.target.host, self.target.port, username=self.target.user, sock=sock,
                password=opts.password, key_filename=str(opts.key_file) if opts.key_file else None,
                allow_agent=opts.key_file is None, look_for_keys=opts.key_file is None and opts.password is None,
                timeout=opts.connect_timeout_s, banner_timeout=opts.connect_timeout_s,
                auth_timeout=opts.connect_timeout_s, channel_timeout=opts.connect_timeout_s,
            )
        except CollectionError:
            client.close()
            raise
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise CollectionError(
                f"{label}: HOST KEY CHANGED: known_hosts has {exc.expected_key.get_name()} "
                f"{fingerprint(exc.expected_key)}, the host offered {exc.key.get_name()} {fingerprint(exc.key)}. "
                "Refusing to connect (possible man-in-the-middle); if the host was reinstalled, "
                f"remove its old entry from {', '.join(str(p) for p in searched)}", kind="host-key") from None
        except paramiko.AuthenticationException as exc:
            client.close()
            how = "key " + str(opts.key_file) if opts.key_file else ("password" if opts.password else
                                                                       "ssh-agent and ~/.ssh keys")
            raise CollectionError(f"{label}: authentication failed with {how} ({type(exc).__name__}); "
                                  f"{self._auth_hint()}", kind="auth") from None
        except paramiko.SSHException as exc:
            client.close()
            if "No authentication methods available" in str(exc):
                raise CollectionError(f"{label}: no SSH key or password to log in with; {self._auth_hint()}",
                                      kind="auth") from None
            kind = "timeout" if "timeout" in str(exc).lower() else "error"
            raise CollectionError(f"{label}: SSH handshake failed: {exc or type(exc).__name__}", kind=kind) from None
        except (EOFError, OSError) as exc:
            client.close()
            kind = "timeout" if isinstance(exc, socket.timeout) or "timeout" in str(exc).lower() else "error"
            raise CollectionError(f"{label}: SSH handshake failed: {exc or type(exc).__name__}", kind=kind) from None
        self._client = client
        return self

    def _auth_hint(self) -> str:
        variable = "ESXDIAG_HOST_PASSWORD" if self.kind == specs.ESXI else "ESXDIAG_GUEST_PASSWORD"
        flag = "--host-ssh" if self.kind == specs.ESXI else "--guest-ssh"
        if self.options.password is not None:
            return f"check the password in {variable} and the user name in {flag}"
        return (f"pass --ssh-key, load a key into ssh-agent, set {variable}, or run on a terminal to be "
                f"prompted; check the user name in {flag}")

    def _refused(self) -> CollectionError:
        """Who refused (address and port), and the advice for that target: ESXi's SSH service is off by
        default and listens on 22; another port, or a guest, is a port with no sshd behind it."""
        port = self.target.port
        where = f"{self.target}: connection refused on port {port}"
        if self.kind == specs.ESXI and port == 22:
            return CollectionError(f"{where}: {_ESXI_SSH_HINT}", kind="disabled")
        if self.kind == specs.ESXI:
            return CollectionError(f"{where}: nothing listens there; check the port in --host-ssh (ESXi's SSH "
                                   "service listens on 22, and is off by default: Host > Actions > Services > "
                                   "Enable Secure Shell)", kind="refused")
        return CollectionError(f"{where}: no sshd listens there in the guest; check the address and port in "
                               "--guest-ssh (USER@HOST[:PORT], or USER@:PORT with the Tools address)", kind="refused")

    def _open_socket(self) -> socket.socket:
        label, timeout = str(self.target), self.options.connect_timeout_s
        try:
            sock = socket.create_connection((self.target.host, self.target.port), timeout=timeout)
        except ConnectionRefusedError:
            raise self._refused() from None
        except socket.timeout:
            raise CollectionError(f"{label}: no answer within {timeout:g} s", kind="unreachable") from None
        except OSError as exc:
            raise CollectionError(f"{label}: unreachable: {exc.strerror or exc}", kind="unreachable") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1 if self.options.tcp_nodelay else 0)
        return sock

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def run_spec(self, spec_name: str, params: dict | None = None, timeout_s: float | None = None,
                 on_wait: OnWait | None = None, out: BinaryIO | None = None,
                 max_bytes: int | None = None) -> CommandResult:
        """Run one allowlisted command. Raises ValueError (nothing sent) for an unknown spec, a
        spec of another target kind or a param that fails validation.

        stdout goes to ``out`` as it arrives when given (else into the result), never more than
        the cap: --output-cap, else ``max_bytes``, else the spec's own. A command that passes the
        cap is stopped and reported as ``truncated`` with the bytes before the cap kept."""
        spec = specs.spec(spec_name)
        if spec.target != self.kind:
            raise ValueError(f"spec {spec_name} is for {spec.target} targets, this connection is {self.kind}")
        values = {k: str(v) for k, v in (params or {}).items()}
        for key, value in values.items():
            if value.startswith("-"):  # the patterns allow it (e.g. iface), but it would read as an option
                raise ValueError(f"{spec_name}: refusing {key}={value!r} (looks like an option)")
        command = spec.render(**values)
        cap = self.options.output_cap_bytes or max_bytes or spec.max_bytes
        return self._exec(command, timeout_s or self.options.command_timeout_s, on_wait, spec.ok_rc,
                          _Sink(out, cap))

    def _exec(self, command: str, timeout_s: float, on_wait: OnWait | None,
              ok_rc: tuple[int, ...] = (0,), sink: "_Sink | None" = None) -> CommandResult:
        """Run one command. When the one before was stopped by us (its output cap or its deadline,
        by closing its channel), a server may end the whole connection in answer, at once or while
        this command starts; that is not a lost host, so the connection is opened again once and this
        read-only command sent again, provided none of its output was kept yet."""
        sink = sink or _Sink(None, specs.DEFAULT_MAX_BYTES)
        after_stop = self._stopped_one
        if after_stop and not self._transport_active():
            result = self._exec_after_reconnect(command, timeout_s, on_wait, ok_rc, sink)
        else:
            result = self._exec_once(command, timeout_s, on_wait, ok_rc, sink)
            if after_stop and result.error_kind == "connection-lost" and sink.size == 0:
                result = self._exec_after_reconnect(command, timeout_s, on_wait, ok_rc, sink)
        self._stopped_one = result.error_kind in ("truncated", "timeout")
        return result

    def _exec_after_reconnect(self, command: str, timeout_s: float, on_wait: OnWait | None,
                              ok_rc: tuple[int, ...], sink: "_Sink") -> CommandResult:
        self.close()
        started = utcnow()
        try:
            self.connect()
        except CollectionError as exc:
            return CommandResult(command, b"", b"", None, started, utcnow(), "connection-lost",
                                 f"{self.target}: the server ended the connection after a command was stopped, "
                                 f"and opening it again failed: {exc}")
        self.notes.append(f"{self.target}: the server ended the connection after esxdiag stopped a command "
                          "(its output cap or its deadline); connected again and went on")
        return self._exec_once(command, timeout_s, on_wait, ok_rc, sink)

    def _exec_once(self, command: str, timeout_s: float, on_wait: OnWait | None,
                   ok_rc: tuple[int, ...], sink: "_Sink") -> CommandResult:
        started, t0 = utcnow(), time.monotonic()
        transport = self._client.get_transport() if self._client else None

        def failed(kind: str, error: str, rc: int | None = None) -> CommandResult:
            return CommandResult(command, sink.kept(), bytes(err), rc, started, utcnow(), kind,
                                 f"{self.target}: {error}", sink.size)

        err = bytearray()
        if transport is None or not transport.is_active():
            return failed("connection-lost", "connection lost before the command could start")
        try:
            chan = transport.open_session(timeout=self.options.connect_timeout_s)
            chan.exec_command(command)
            chan.shutdown_write()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if not transport.is_active():
                return failed("connection-lost", "connection lost before the command could start")
            return failed("error", f"could not start the command: {exc}")
        next_wait = t0 + 1.0
        try:
            while True:
                now = time.monotonic()
                if now - t0 >= timeout_s:
                    return failed("timeout", f"no result within {timeout_s:g} s; its channel was closed")
                select.select([chan], [], [], min(0.5, timeout_s - (now - t0)))
                _drain(chan, sink, err)
                if sink.truncated:
                    return failed("truncated", f"output passed the {_size(sink.cap)} cap: the first "
                                  f"{_size(sink.cap)} kept, the command was stopped (raise it with --output-cap)")
                if chan.exit_status_ready():
                    _drain(chan, sink, err)
                    break
                if chan.closed or not transport.is_active():
                    return failed("connection-lost", "connection lost while the command ran")
                if on_wait is not None and now >= next_wait:
                    if on_wait(now - t0, timeout_s):  # the caller has what it needs (esxtop: a shortened window)
                        _drain(chan, sink, err)
                        return CommandResult(command, sink.kept(), bytes(err), None, started, utcnow(), size=sink.size)
                    next_wait = now + 0.5
            rc = chan.recv_exit_status()
        finally:
            chan.close()
        if sink.truncated:
            return failed("truncated", f"output passed the {_size(sink.cap)} cap: the first {_size(sink.cap)} kept")
        if rc == -1 and not transport.is_active():  # paramiko's status for a channel whose connection died
            return failed("connection-lost", "connection lost while the command ran")
        return _finished(command, sink.kept(), bytes(err), rc, started, ok_rc, sink.size)


class _Sink:
    """stdout of one command: into a file or memory, never more than ``cap`` bytes."""

    def __init__(self, out: BinaryIO | None, cap: int):
        self.out, self.cap = out, cap
        self.buffer = bytearray() if out is None else None
        self.size = 0
        self.truncated = False

    def write(self, data: bytes) -> None:
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[:room]
        if data:
            if self.out is not None:
                self.out.write(data)
            elif self.buffer is not None:
                self.buffer += data
            self.size += len(data)

    def kept(self) -> bytes:
        return bytes(self.buffer) if self.buffer is not None else b""


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"


def _drain(chan: paramiko.Channel, out: _Sink, err: bytearray) -> None:
    while chan.recv_ready() and not out.truncated:
        out.write(chan.recv(65536))
    while chan.recv_stderr_ready():
        chunk = chan.recv_stderr(65536)
        err += chunk[: max(0, STDERR_KEEP_BYTES - len(err))]


def _finished(command: str, out: bytes, err: bytes, rc: int, started: str,
              ok_rc: tuple[int, ...] = (0,), size: int = 0) -> CommandResult:
    ended = utcnow()
    if rc in ok_rc:
        return CommandResult(command, out, err, rc, started, ended, size=size)
    first = next((line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()), "")
    kind = {127: "not-found", 126: "permission"}.get(rc, "nonzero-exit")
    return CommandResult(command, out, err, rc, started, ended, kind,
                         f"exit status {rc}" + (f": {first[:200]}" if first else ""), size)


def connect(target: SshTarget | str, kind: str, options: SshOptions | None = None) -> SshConnection:
    """Open (and verify) a connection; raises CollectionError naming user@host:port."""
    if isinstance(target, str):
        target = SshTarget.parse(target)
    return SshConnection(target, kind, options).connect()
