"""vCenter / ESXi credentials: where they come from, in order, and how they are kept out of sight.

Each field is resolved on its own, first hit wins:

1. explicit arguments (URL, user, insecure, thumbprint). A password is never an argument: argv is
   visible to every user of the machine.
2. environment: ``ESXDIAG_VCENTER``, ``ESXDIAG_USERNAME``, ``ESXDIAG_PASSWORD``,
   ``ESXDIAG_INSECURE``, ``ESXDIAG_THUMBPRINT``, then govc's ``GOVC_URL``, ``GOVC_USERNAME``,
   ``GOVC_PASSWORD``, ``GOVC_INSECURE``. A URL in the environment may embed ``user:pass@host``:
   both are stripped from the URL and used (an explicit ``*_USERNAME``/``*_PASSWORD`` wins).
3. a config file (INI, default ``~/.config/esxdiag/config.ini``), section ``[vcenter]`` with
   ``url``, ``username``, ``password``, ``insecure``, ``thumbprint``. A file holding a password
   must not be readable by group or other.
4. an interactive ``getpass`` prompt for the password, only when stdin is a TTY.

A section ``[vcenter HOST]`` (or ``[vcenter HOST:PORT]``) of the config file holds ``username``,
``password``, ``insecure`` and ``thumbprint`` for that vCenter only, so one scan can log in to
vCenters of different SSO domains and pin each one's certificate. Being more specific, it comes
right after the explicit arguments: before the environment and ``[vcenter]``.
"""

from __future__ import annotations

import configparser
import getpass
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

from esxdiag.config import describe_config_error
from esxdiag.errors import EsxdiagError

DEFAULT_CONFIG = Path("~/.config/esxdiag/config.ini")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_THUMBPRINT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class CredentialsError(EsxdiagError):
    """Credentials are missing, contradictory or stored unsafely (bad usage: exit code 2)."""


@dataclass(frozen=True)
class Credentials:
    url: str  # normalised: https://host[:port]/sdk, never with user info
    username: str
    password: str = field(repr=False)
    insecure: bool = False
    thumbprint: str | None = None  # lower-case hex, no colons; SHA-1 (40) or SHA-256 (64)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 443


def resolve_credentials(
    url: str | None = None,
    username: str | None = None,
    *,
    insecure: bool | None = None,
    thumbprint: str | None = None,
    env: Mapping[str, str] | None = None,
    config_path: str | Path | None = None,
    prompt: Callable[[str], str] = getpass.getpass,
    stdin_isatty: Callable[[], bool] = lambda: sys.stdin.isatty(),
) -> Credentials:
    env = os.environ if env is None else env
    if url and _split_userinfo(url)[2] is not None:
        raise CredentialsError("refusing a password inside the URL argument: use ESXDIAG_PASSWORD, "
                               "the config file or the prompt")
    arg_url, arg_user, _ = _split_userinfo(url or "")
    esxdiag_url, esxdiag_user, esxdiag_password = _split_userinfo(env.get("ESXDIAG_VCENTER") or "")
    govc_url, govc_user, govc_password = _split_userinfo(env.get("GOVC_URL") or "")
    config, per_host = _read_config(config_path)

    def first(*candidates: str | None) -> str | None:
        return next((c for c in candidates if c not in (None, "")), None)

    raw_url = first(arg_url, esxdiag_url, govc_url, config.get("url"))
    if raw_url is None:
        raise CredentialsError("no vCenter URL: pass --vcenter, set ESXDIAG_VCENTER or GOVC_URL, or add "
                               f"url= under [vcenter] in {DEFAULT_CONFIG}")
    normalised = _normalise_url(raw_url)
    parts = urlsplit(normalised)
    host = per_host.get(f"{(parts.hostname or '').lower()}:{parts.port or 443}") or per_host.get(
        (parts.hostname or "").lower(), {})
    user = first(username, arg_user, host.get("username"), env.get("ESXDIAG_USERNAME"), esxdiag_user,
                 env.get("GOVC_USERNAME"), govc_user, config.get("username"))
    if user is None:
        raise CredentialsError("no user name: pass --user, set ESXDIAG_USERNAME or GOVC_USERNAME, or "
                               "add username= under [vcenter] in the config file (--config)")
    password = first(host.get("password"), env.get("ESXDIAG_PASSWORD"), esxdiag_password, env.get("GOVC_PASSWORD"),
                     govc_password, config.get("password"))
    if password is None:
        if not stdin_isatty():
            raise CredentialsError("no password: set ESXDIAG_PASSWORD or GOVC_PASSWORD, or add it to "
                                   "a chmod 600 config file (stdin is not a terminal, so no prompt)")
        password = prompt(f"Password for {user} at {parts.hostname}: ")
    insecure_flag = insecure if insecure is not None else _parse_bool(
        first(host.get("insecure"), env.get("ESXDIAG_INSECURE"), env.get("GOVC_INSECURE"),
              config.get("insecure")) or "")
    pin = first(thumbprint, host.get("thumbprint"), env.get("ESXDIAG_THUMBPRINT"), config.get("thumbprint"))
    return Credentials(normalised, user, password, insecure_flag, _normalise_thumbprint(pin))


def insecure_warning(creds: Credentials, insecure_flag: bool | None, env: Mapping[str, str]) -> str | None:
    """The line said whenever TLS verification is off for a vCenter (None while it is verified or
    pinned), naming what turned it off."""
    if not creds.insecure or creds.thumbprint:
        return None
    why = "--insecure" if insecure_flag else next(
        (f"{k}={env[k]}" for k in ("ESXDIAG_INSECURE", "GOVC_INSECURE") if env.get(k)), "insecure= in the config file")
    return (f"warning: TLS certificate verification is OFF for {creds.host}:{creds.port} ({why}): anyone on the "
            "path can read the vCenter password")


def _split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """'https://u:p@h/sdk' -> ('https://h/sdk', 'u', 'p'); also accepts govc's bare 'u:p@h'."""
    if not url:
        return "", None, None
    try:
        parts = urlsplit(url if "://" in url else f"https://{url}")
    except ValueError:  # a broken IPv6 literal: say so without echoing what may hold a password
        raise CredentialsError("not a vCenter URL: a bracketed IPv6 address is not closed (expected "
                               "https://[ADDR]:PORT/sdk; pass --vcenter)") from None
    if "@" not in parts.netloc:
        return url, None, None
    userinfo, hostport = parts.netloc.rsplit("@", 1)
    user, sep, password = userinfo.partition(":")
    bare = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return bare, unquote(user) or None, unquote(password) if sep else None


def _normalise_url(url: str) -> str:
    bad = CredentialsError(f"not a vCenter URL: {url!r} (expected https://host[:port][/sdk], an IPv6 address "
                           "in brackets; pass --vcenter)")
    try:
        parts = urlsplit(url if "://" in url else f"https://{url}")
        hostname, port = parts.hostname, parts.port  # both raise ValueError on a broken host or port
    except ValueError:
        raise bad from None
    if parts.scheme not in ("https", "http") or not hostname or port == 0:
        raise bad
    hostport = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, hostport, parts.path if parts.path not in ("", "/") else "/sdk", "", ""))


def _parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise CredentialsError(f"insecure must be true/false, not {text!r}")


def _normalise_thumbprint(pin: str | None) -> str | None:
    if pin is None:
        return None
    value = pin.replace(":", "").strip().lower()
    if not _THUMBPRINT.fullmatch(value):
        raise CredentialsError(f"thumbprint must be a SHA-1 or SHA-256 hex digest, not {pin!r}")
    return value


def _read_config(config_path: str | Path | None) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """([vcenter], {"host" or "host:port": [vcenter HOST] section}), host names lower-case."""
    path = Path(config_path or DEFAULT_CONFIG).expanduser()
    if not path.exists():
        if config_path is not None:
            raise CredentialsError(f"config file {path} does not exist")
        return {}, {}
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError, OSError) as exc:
        raise CredentialsError(f"config file {path} is unreadable: {describe_config_error(exc)}") from None
    section = dict(parser["vcenter"]) if parser.has_section("vcenter") else {}
    per_host = {m[1].lower(): dict(parser[name]) for name in parser.sections()
                if (m := re.fullmatch(r"vcenter\s+(\S+)\s*", name))}
    for name, values in per_host.items():
        if "url" in values:
            raise CredentialsError(f"config file {path}: [vcenter {name}] names its vCenter in the section "
                                   "title; url= belongs under [vcenter]")
    shared = shared_secret(path, "a password")
    if shared and any(s.get("password") for s in (section, *per_host.values())):
        raise CredentialsError(f"config file {shared}")
    return section, per_host


def shared_secret(path: Path, holds: str) -> str | None:
    """Why a file holding a secret is refused: group or other may access it (None when private)."""
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"{path} holds {holds} but is accessible by group/other (mode {stat.filemode(mode)}): run chmod 600 {path}"
    return None
