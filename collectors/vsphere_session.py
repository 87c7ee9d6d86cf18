"""One logged-in pyvmomi session: TLS policy, error kinds, a SOAP request counter, paged retrieval.

TLS is verified against the system CA store unless the user explicitly asked for ``insecure``.
A thumbprint pin (SHA-1 or SHA-256 of the DER certificate) is checked against the certificate
the server actually presents, whether or not a CA vouches for it; a mismatch is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import logging
import re
import socket
import ssl
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import urlsplit

from pyVim import connect as pyvim_connect
from pyVmomi import Security, vim, vmodl

from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors import soap_stream
from esxdiag.collectors.soap_stream import (AnswerTimeout, BadAnswer,  # and every answer's checks with them
                                            ResponseTooLarge)
from esxdiag.errors import CollectionError

log = logging.getLogger(__name__)
LOGOUT_DEADLINE_S = 10.0  # a server that stalls the logout does not hold the run's end
# the faults that say the credentials were refused; any other fault during login is the server's failure
LOGIN_REFUSALS = (vim.fault.InvalidLogin, vim.fault.NoPermission, vim.fault.NotAuthenticated)


@dataclass
class VsphereSession:
    si: Any  # vim.ServiceInstance
    creds: Credentials
    request_count: int = 0  # SOAP requests sent through this session after login
    perf_counters: dict[str, Any] | None = field(default=None, repr=False)  # name -> PerfCounterInfo
    counter_keys: dict[str, tuple[int, str]] | None = field(default=None, repr=False)  # name -> (id, unit)
    _content: Any = field(default=None, repr=False)
    context: "_SessionContext | None" = field(default=None, repr=False)
    _count_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # fleet scans query in threads

    @contextlib.contextmanager
    def within(self, seconds: float, what: str) -> Iterator[None]:
        """Everything sent to the server inside the block completes within ``seconds`` overall:
        a server that answers slowly, a byte at a time, is cut off (CollectionError kind timeout)."""
        if self.context is None:
            yield
            return
        with self.context.deadline(seconds, f"{self.where}: {what}"):
            yield

    @property
    def content(self) -> Any:
        return self._content

    @property
    def call_timeout_s(self) -> float | None:
        """Each call's deadline: the session's timeout (--timeout) bounds the whole answer, its
        reading and its decoding, not only each read."""
        return self.context.timeout_s if self.context is not None else None

    @property
    def host(self) -> str:
        return self.creds.host

    @property
    def where(self) -> str:
        """host:port, the prefix of every error message about this session."""
        return f"{self.creds.host}:{self.creds.port}"

    @property
    def source(self) -> str:
        """'vcenter' or 'esxi', from the API type the server reports."""
        return "vcenter" if self._content.about.apiType == "VirtualCenter" else "esxi"

    def attach(self) -> "VsphereSession":
        stub = self.si._stub
        invoke = stub.InvokeMethod

        def counted(mo: Any, info: Any, args: Any, *rest: Any) -> Any:
            with self._count_lock:
                self.request_count += 1
            with soap_stream.answer_deadline(self.call_timeout_s):
                return invoke(mo, info, args, *rest)

        stub.InvokeMethod = counted  # property reads (Fetch) go through InvokeMethod too
        self._content = self.si.RetrieveContent()
        return self

    def add_requests(self, count: int) -> None:
        """Requests sent on this session by fleet-scan worker processes."""
        with self._count_lock:
            self.request_count += count

    def close(self) -> None:
        try:
            with self.within(LOGOUT_DEADLINE_S, "logging out"):
                self._content.sessionManager.Logout()
        except (CollectionError, vmodl.MethodFault, OSError, http.client.HTTPException) as exc:
            log.debug("logout from %s failed: %s", self.host, type(exc).__name__)


def connect(creds: Credentials, timeout_s: float = 30, deadline_s: float | None = None) -> VsphereSession:
    """Log in; raises CollectionError(kind=unreachable|tls|auth|timeout) naming the host.

    ``timeout_s`` bounds each connect and read; ``deadline_s`` (default: the same) the whole login."""
    where = f"{creds.host}:{creds.port}"
    context = _tls_context(creds, timeout_s)
    with context.deadline(deadline_s or timeout_s, f"{where}: login"):
        si = _login(creds, timeout_s, context, where)
        session = VsphereSession(si, creds, context=context)
        with api_errors(session, "reading the service content"):
            return session.attach()


def joined(creds: Credentials, cookie: str, api_version: str, timeout_s: float) -> VsphereSession:
    """A session object on an existing login (a fleet-scan worker): same TLS policy, the login's
    cookie, no password. Call attach() before use; close() would end the shared login, so don't."""
    from pyVmomi.SoapAdapter import SoapStubAdapter
    context = _tls_context(creds, timeout_s)
    stub = SoapStubAdapter(host=creds.host, port=creds.port, path=_path(creds), version=api_version,
                           sslContext=context, httpConnectionTimeout=timeout_s)
    stub.cookie = cookie
    return VsphereSession(vim.ServiceInstance("ServiceInstance", stub), creds, context=context)


def _login(creds: Credentials, timeout_s: float, context: "_SessionContext", where: str) -> Any:
    try:
        _probe(creds, timeout_s)
        return pyvim_connect.SmartConnect(
            protocol="https", host=creds.host, port=creds.port, path=_path(creds),
            user=creds.username, pwd=creds.password, sslContext=context,
            httpConnectionTimeout=timeout_s)
    except vim.fault.InvalidLogin:
        raise CollectionError(f"{where}: login failed for user {creds.username!r} (wrong user name or "
                              "password)", kind="auth") from None
    except vim.fault.NoPermission as exc:
        raise CollectionError(f"{where}: user {creds.username!r} lacks permission ({getattr(exc, 'msg', '') or exc})",
                              kind="auth") from None
    except ssl.SSLCertVerificationError as exc:
        raise CollectionError(f"{where}: TLS certificate not trusted ({exc.verify_message}); install "
                              f"the CA, pin its thumbprint{_offered(creds, timeout_s)}, or pass --insecure knowingly",
                              kind="tls") from None
    except Security.ThumbprintMismatchException as exc:
        raise CollectionError(f"{where}: certificate thumbprint {exc.actual} does not match the pinned "
                              f"{exc.expected}; refusing to connect", kind="tls") from None
    except ssl.SSLError as exc:
        raise CollectionError(f"{where}: TLS handshake failed ({exc.reason})", kind="tls") from None
    except ResponseTooLarge as exc:
        raise CollectionError(f"{where}: logging in: {exc}", kind="query") from None
    except BadAnswer as exc:
        raise CollectionError(f"{where}: logging in: {exc}", kind=exc.kind) from None
    except AnswerTimeout as exc:
        raise CollectionError(f"{where}: logging in: {exc}", kind="timeout") from None
    except (socket.timeout, TimeoutError):
        raise CollectionError(f"{where}: no answer within {timeout_s:g} s", kind="timeout") from None
    except http.client.HTTPException as exc:
        if _http_status(exc):
            raise CollectionError(f"{where}: logging in: {_http_status(exc)}", kind="bad-answer") from None
        raise CollectionError(f"{where}: unreachable ({_reason(exc)})", kind="unreachable") from None
    except OSError as exc:
        raise CollectionError(f"{where}: unreachable ({_reason(exc)})", kind="unreachable") from None
    except LOGIN_REFUSALS as exc:
        raise CollectionError(f"{where}: login refused: {fault_text(exc)}", kind="auth") from None
    except vmodl.MethodFault as exc:  # the server failed the login (SystemError, ...): not the credentials
        raise CollectionError(f"{where}: logging in: the server answered {fault_text(exc)}",
                              kind="query") from None
    except Exception as exc:  # pyVim raises a bare Exception when no vSphere API answers
        raise CollectionError(f"{where}: not a vSphere API endpoint ({_reason(exc)})",
                              kind="unreachable") from None


def _offered(creds: Credentials, timeout_s: float) -> str:
    """The certificate's SHA-256, for the user to check out of band and pin (like ssh's fingerprint)."""
    try:
        return f" (--thumbprint {server_thumbprints(creds.host, creds.port, min(timeout_s, 10))[1]} once verified)"
    except (OSError, ssl.SSLError):
        return ""


def server_thumbprints(host: str, port: int, timeout_s: float = 10) -> tuple[str, str]:
    """(sha1, sha256) hex digests of the certificate the server presents, unverified."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=timeout_s) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
    if der is None:  # only without a handshake, which wrap_socket has done
        raise ssl.SSLError(f"{host}:{port}: no certificate offered")
    return hashlib.sha1(der).hexdigest(), hashlib.sha256(der).hexdigest()


@contextlib.contextmanager
def api_errors(session: VsphereSession, what: str) -> Iterator[None]:
    """Turn faults and transport errors raised while doing `what` into one-line CollectionErrors."""
    where = session.where
    try:
        yield
    except vmodl.fault.ManagedObjectNotFound:
        raise CollectionError(f"{where}: {what}: the object no longer exists", kind="not-found") from None
    except (vim.fault.NotAuthenticated, vim.fault.NoPermission) as exc:
        kind = "auth" if isinstance(exc, vim.fault.NotAuthenticated) else "permission"
        raise CollectionError(f"{where}: {what}: {fault_text(exc)}", kind=kind) from None
    except vmodl.MethodFault as exc:
        raise CollectionError(f"{where}: {what}: {fault_text(exc)}", kind="query") from None
    except ResponseTooLarge as exc:
        raise CollectionError(f"{where}: {what}: {exc}", kind="query") from None
    except BadAnswer as exc:
        raise CollectionError(f"{where}: {what}: {exc}", kind=exc.kind) from None
    except AnswerTimeout as exc:
        raise CollectionError(f"{where}: {what}: {exc}", kind="timeout") from None
    except (socket.timeout, TimeoutError):
        raise CollectionError(f"{where}: {what}: no answer in time", kind="timeout") from None
    except http.client.HTTPException as exc:
        if _http_status(exc):
            raise CollectionError(f"{where}: {what}: {_http_status(exc)}", kind="bad-answer") from None
        raise CollectionError(f"{where}: {what}: connection lost ({_reason(exc)})", kind="unreachable") from None
    except OSError as exc:
        raise CollectionError(f"{where}: {what}: connection lost ({_reason(exc)})", kind="unreachable") from None


def retrieve(session: VsphereSession, specs: list[Any], page_size: int | None = None) -> Iterator[Any]:
    """RetrievePropertiesEx, following continuation tokens: yields ObjectContent."""
    for page, _more in retrieve_pages(session, specs, page_size):
        yield from page


def retrieve_pages(session: VsphereSession, specs: list[Any],
                   page_size: int | None = None) -> Iterator[tuple[list[Any], bool]]:
    """RetrievePropertiesEx page by page: (ObjectContents, whether another page follows)."""
    collector = session.content.propertyCollector
    options = vmodl.query.PropertyCollector.RetrieveOptions(maxObjects=page_size)
    result = collector.RetrievePropertiesEx(specSet=specs, options=options)
    while result is not None:
        yield list(result.objects or []), bool(result.token)
        if not result.token:
            return
        result = collector.ContinueRetrievePropertiesEx(token=result.token)


def props_of(content: Any) -> dict[str, Any]:
    return {prop.name: prop.val for prop in content.propSet}


class _DeadlineSocket(ssl.SSLSocket):
    """A TLS socket whose every send and read waits at most until the calling thread's call
    deadline (soap_stream.answer_deadline), never longer than the session timeout: a server that
    trickles its answer a byte at a time is cut off when the deadline passes, in the thread that
    waits for it, whichever pooled connection it uses."""

    def _bound(self) -> None:
        base = getattr(self.context, "timeout_s", None)
        left = soap_stream.seconds_left()  # AnswerTimeout once it has passed
        wanted = base if left is None else left if base is None else min(base, left)
        if wanted is not None and self.gettimeout() != wanted:
            self.settimeout(wanted)

    def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
        self._bound()
        try:
            return super().recv_into(buffer, nbytes, flags)
        except TimeoutError:
            soap_stream.seconds_left()  # the deadline's timeout says so
            raise

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        self._bound()
        try:
            return super().recv(buflen, flags)
        except TimeoutError:
            soap_stream.seconds_left()
            raise

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._bound()
        try:
            return super().sendall(data, flags)
        except TimeoutError:
            soap_stream.seconds_left()
            raise


class _SessionContext(ssl.SSLContext):
    """Puts the session timeout on every socket pyvmomi opens and, when pinned, accepts exactly
    the certificate whose SHA-1/SHA-256 digest is pinned, CA-signed or not.

    pyvmomi's API-version discovery opens its own connection without a timeout; wrapping every
    socket here bounds the handshake and every read on it, for discovery and SOAP alike. The pin
    is checked right after the handshake, before any request is sent.
    """

    timeout_s: float = 30.0
    pin: str | None = None
    sslsocket_class = _DeadlineSocket

    def wrap_socket(self, sock: socket.socket, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        sock.settimeout(self.timeout_s)
        handshake = kwargs.pop("do_handshake_on_connect", True)
        tls = super().wrap_socket(sock, *args, **{**kwargs, "do_handshake_on_connect": False})
        self._sockets().add(tls)  # before the handshake: a trickled handshake is cut off too
        if self._expired():
            tls.close()
            raise OSError("the deadline for this request has passed")
        if handshake:
            tls.do_handshake()
        if self.pin:
            der = tls.getpeercert(binary_form=True) or b""
            digest = (hashlib.sha1 if len(self.pin) == 40 else hashlib.sha256)(der).hexdigest()
            if digest != self.pin:
                tls.close()
                raise Security.ThumbprintMismatchException(self.pin, digest)
        return tls

    # --- the overall deadline: a watchdog shuts every socket down when it passes -------------
    def _sockets(self) -> "weakref.WeakSet[socket.socket]":
        if not hasattr(self, "_open"):
            self._open: weakref.WeakSet = weakref.WeakSet()
        return self._open

    def _expired(self) -> bool:
        return getattr(self, "_cut", False)

    def _cut_off(self) -> None:
        self._cut = True
        for sock in list(self._sockets()):
            try:  # the OS-level shutdown only: SSLSocket.shutdown would pull its state from under the reader
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    @contextlib.contextmanager
    def deadline(self, seconds: float, what: str) -> Iterator[None]:
        """Raise CollectionError(kind timeout) if the block is still talking to the server after
        ``seconds``: per-read timeouts alone let a trickling server hold us forever."""
        self._cut = False
        timer = threading.Timer(seconds, self._cut_off)
        timer.daemon = True
        timer.start()
        try:
            yield
        except Exception:  # whatever the cut-off socket made the client raise
            if self._expired():
                raise CollectionError(f"{what}: no complete answer within {seconds:g} s; gave up",
                                      kind="timeout") from None
            raise
        finally:
            timer.cancel()
            self._cut = False


def _tls_context(creds: Credentials, timeout_s: float) -> _SessionContext:
    context = _SessionContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies chain and host name by default
    context.timeout_s = timeout_s
    if creds.thumbprint or creds.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.pin = creds.thumbprint
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    return context


def _probe(creds: Credentials, timeout_s: float) -> None:
    """A bounded TCP connect first: pyvmomi's own connects have no timeout."""
    with socket.create_connection((creds.host, creds.port), timeout=timeout_s):
        pass


def _path(creds: Credentials) -> str:
    return urlsplit(creds.url).path or "/sdk"


FAULT_TEXT_CHARS = 300  # a fault's message as shown: the server's text, one line, bounded


def fault_text(fault: Any) -> str:
    """'NoPermission: <msg>' for a vmodl fault, the message on one line and cut at FAULT_TEXT_CHARS."""
    name = type(fault).__name__.rsplit(".", 1)[-1]
    msg = getattr(fault, "msg", None)
    if not msg:
        return name
    text = " ".join(str(msg)[:FAULT_TEXT_CHARS + 1].split())
    return f"{name}: {text[:FAULT_TEXT_CHARS]}..." if len(text) > FAULT_TEXT_CHARS else f"{name}: {text}"


def _http_status(exc: http.client.HTTPException) -> str | None:
    """'the server answered HTTP 503 Service Unavailable' for the bare HTTPException pyVmomi raises
    for a status other than 200 and 500 (the server is there; it answered no SOAP); else None."""
    text = str(exc)
    if type(exc) is http.client.HTTPException and re.fullmatch(r"[1-5]\d\d( .*)?", text):
        return f"the server answered HTTP {_reason(exc)[:80]}, not SOAP"
    return None


def _reason(exc: BaseException) -> str:
    return " ".join((getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).split())
