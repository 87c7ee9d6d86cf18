"""A fleet scan's options, as add_fleet_options declares them (esxdiag.cli.scan): their ranges,
the vCenters and their logins, the TLS warnings, the API pass's options and how long a proof is kept."""

from __future__ import annotations

import argparse
import configparser
import os

from esxdiag.collectors.credentials import DEFAULT_CONFIG, insecure_warning, resolve_credentials
from esxdiag.errors import EsxdiagError

DEEP_RECHECK_S = 3600.0  # serve's --deep-recheck default


def check_fleet_options(args: argparse.Namespace) -> None:
    """The ranges of add_fleet_options' numbers (a bad one fails before any network)."""
    for name, low, high in (("window", 20, 3600), ("in_flight", 1, 32), ("page_size", 1, 100000),
                            ("timeout", 1, 3600)):
        value = getattr(args, name)
        if not low <= value <= high:
            raise EsxdiagError(f"--{name.replace('_', '-')} must be between {low:g} and {high:g}")
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise EsxdiagError("--workers must be between 1 and 64")
    if args.max_query_metrics is not None and not 1 <= args.max_query_metrics <= 100000:
        raise EsxdiagError("--max-query-metrics must be between 1 and 100000")
    if args.proof_max_age is not None and not 0 <= args.proof_max_age <= 30 * 86400:
        raise EsxdiagError("--proof-max-age must be between 0 and 2592000")


def proof_max_age(given: float | None, deep_recheck_s: float = DEEP_RECHECK_S) -> float:
    """How long a deep check's proof is kept (and, in serve, a deep check shown): --proof-max-age,
    else twice serve's --deep-recheck (its default for scan)."""
    return 2 * deep_recheck_s if given is None else given


def vcenter_urls(args: argparse.Namespace) -> list[str | None]:
    """--vcenter, else `[fleet] vcenters` in the config file, else one vCenter from env/config."""
    if args.vcenter:
        return list(dict.fromkeys(args.vcenter))
    path = (args.config or DEFAULT_CONFIG).expanduser()
    if path.exists():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise EsxdiagError(f"{path}: cannot read config ({type(exc).__name__})") from None
        listed = parser.get("fleet", "vcenters", fallback="").replace(",", " ").split()
        if listed:
            return list(dict.fromkeys(listed))
    return [None]


def fleet_credentials(args: argparse.Namespace) -> list:
    """One Credentials per vCenter asked for (add_fleet_options), each resolved on its own."""
    urls = vcenter_urls(args)
    if args.thumbprint and len(urls) > 1:
        raise EsxdiagError("--thumbprint pins one certificate: scan one vCenter, pin each under [vcenter HOST] "
                           "in --config, or trust the CA for several")
    return [resolve_credentials(url, args.user, insecure=args.insecure, thumbprint=args.thumbprint,
                                config_path=args.config) for url in urls]


def tls_warnings(args: argparse.Namespace, targets: list) -> list[str]:
    """One warning per vCenter whose TLS certificate is not verified."""
    return [w for w in (insecure_warning(c, args.insecure, os.environ) for c in targets) if w]


def scan_options(args: argparse.Namespace):
    """add_fleet_options -> the API pass's ScanOptions (imports pyvmomi: only when a scan goes to the network)."""
    from esxdiag.collectors.fleet import Filters, ScanOptions

    filters = Filters(tuple(args.datacenter), tuple(args.cluster), tuple(args.host), tuple(args.folder), tuple(args.vm))
    return ScanOptions(window_s=args.window, filters=filters, page_size=args.page_size, in_flight=args.in_flight,
                       timeout_s=args.timeout, max_metrics=args.max_query_metrics, nic_types=args.nic_types,
                       workers=args.workers)
