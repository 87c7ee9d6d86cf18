"""A guest's sosreport, as a directory or a tarball: the networking plugin's command outputs
(sos_commands/networking/<command with spaces as _>), the vCPU count from proc/cpuinfo, ring
persistence from the network configuration files it copied, and its date. One sosreport is one
reading of the counters; two of the same guest make a window."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Callable

from esxdiag.intake import archive
from esxdiag.intake.found import Found, IntakeError, read_head, under

NET = "sos_commands/networking"
_BY_PREFIX = (("ethtool_-S_", "ethtool_stats"), ("ethtool_-g_", "ethtool_rings"), ("ethtool_-i_", "ethtool_driver"),
              ("ethtool_-P_", "ethtool_permaddr"))
_LINK_FILES = ("ip_-o_link", "ip_-o_link_show", "ip_link", "ip_-s_-d_link", "ip_-d_address", "ip_address")
_STATS_FILES = (("nstat_-zas", "nstat"), ("nstat_-asz", "nstat"), ("netstat_-s", "netstat_s"))
# the paths the ring_persistence spec greps on a live guest
_CONFIG = ("etc/NetworkManager/system-connections", "etc/udev/rules.d", "etc/systemd/system", "etc/systemd/network",
           "etc/rc.local",
           "etc/rc.d/rc.local", "etc/network/interfaces", "etc/network/interfaces.d", "etc/sysconfig/network-scripts",
           "etc/netplan")
_DATE_FILES = ("sos_commands/date/date_--utc", "sos_commands/date/date")
Derive = Callable[[str, str], tuple[str, Path]]  # (name, content) -> (manifest name, real path)


def is_tree(path: Path) -> bool:
    return (path / "sos_commands").is_dir()


def is_tarball(path: Path) -> bool:
    return archive.is_archive(path) and "sosreport" in path.name.lower()


def _wanted(inner: PurePosixPath) -> bool:
    text = inner.as_posix()
    return (text.startswith(NET + "/") and inner.parent.as_posix() == NET) or text == "proc/cpuinfo" \
        or text in _DATE_FILES or text in ("hostname", "sos_commands/host/hostname") or any(text == c or text.startswith(c + "/") for c in _CONFIG)


def unpack(path: Path, dest: Path, skipped: list[tuple[str, str]]) -> Path:
    tree = archive.unpack(path, dest, _wanted, skipped)
    if not (tree / NET).is_dir():
        why = f" ({'; '.join(f'{w}: {y}' for w, y in skipped[-3:])})" if skipped else ""
        raise IntakeError(f"{path}: no readable {NET}/ inside: not a sosreport with the networking plugin{why}")
    return tree


def captures(tree: Path, prefix: str, derive: Derive, notes: list[str]) -> list[Found]:
    net = tree / NET
    out: list[Found] = []
    if net.is_dir():
        for entry in sorted(net.iterdir()):
            if not entry.is_file() or entry.is_symlink():
                continue
            for start, spec in _BY_PREFIX:
                iface = entry.name[len(start):]
                if entry.name.startswith(start) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,14}", iface):
                    out.append(_found(tree, entry, prefix, spec, {"iface": iface}))
        link = next((net / n for n in _LINK_FILES if (net / n).is_file()), None)
        if link:
            out.append(_found(tree, link, prefix, "ip_link"))
        stats = next(((net / n, s) for n, s in _STATS_FILES if (net / n).is_file()), None)
        if stats:
            out.append(_found(tree, stats[0], prefix, stats[1]))
    cpuinfo = tree / "proc" / "cpuinfo"
    if cpuinfo.is_file() and not cpuinfo.is_symlink():
        count = len(re.findall(r"(?m)^processor\s*:", read_head(cpuinfo, 4 * 2**20).decode("utf-8", "replace")))
        if count:
            rel, path = derive(under(prefix, "nproc (processors in proc-cpuinfo).txt"), f"{count}\n")
            out.append(Found(rel, path, "nproc", prefix, origin="proc/cpuinfo"))
    if any((tree / c).exists() for c in _CONFIG):
        rel, path = derive(under(prefix, "ring_persistence (from etc).txt"), _grep_config(tree))
        out.append(Found(rel, path, "ring_persistence", prefix, origin="the configuration files in the sosreport"))
    when = _date(tree, notes)
    hostname = _hostname(tree)
    for item in out:
        item.ended, item.machine = when, hostname
    if not out:
        notes.append(f"{prefix or 'the folder'}: a sosreport without the networking plugin's ethtool / netstat outputs")
    else:
        notes.append(f"{prefix or 'the folder'}: sosreport read ({len(out)} captures{', taken ' + when if when else ''}); "
                     "one sosreport is one reading: pair it with a later one for a window")
    return out


def _found(tree: Path, path: Path, prefix: str, spec: str, params: dict | None = None) -> Found:
    rel = under(prefix, path.relative_to(tree).as_posix())
    head = read_head(path, 4096).decode("utf-8", "replace")
    return Found(rel, path, spec, prefix, dict(params or {}), head=head, origin="sosreport file name")


def _grep_config(tree: Path) -> str:
    """What `grep -rsIn -e ethtool -e ring-rx -e BufferSize PATHS` prints on the guest, from the copied files."""
    lines = []
    for config in _CONFIG:
        base = tree / config
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        for path in files[:2000]:
            if path.is_symlink():
                continue
            text = read_head(path, 2**20)
            if b"\x00" in text:
                continue
            for n, line in enumerate(text.decode("utf-8", "replace").splitlines(), 1):
                if "ethtool" in line or "ring-rx" in line or "BufferSize" in line:
                    lines.append(f"/{path.relative_to(tree).as_posix()}:{n}:{line}")
    return "\n".join(lines) + ("\n" if lines else "")


def _hostname(tree: Path) -> str | None:
    for name in ("hostname", "sos_commands/host/hostname", "sos_commands/general/hostname"):
        path = tree / name
        if path.is_file() and not path.is_symlink():
            text = read_head(path, 256).decode("utf-8", "replace").strip()
            if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}", text):
                return text.split(".")[0]
    return None


def _date(tree: Path, notes: list[str]) -> str | None:
    for name in _DATE_FILES:
        path = tree / name
        if path.is_file() and not path.is_symlink():
            text = " ".join(read_head(path, 200).decode("utf-8", "replace").split())
            for fmt in ("%a %b %d %H:%M:%S %Z %Y", "%a %d %b %Y %H:%M:%S %Z"):
                try:
                    moment = datetime.strptime(text, fmt)
                except ValueError:
                    continue
                if text.split()[-2 if fmt.endswith("%Y") else -1] in ("UTC", "GMT"):
                    return moment.replace(tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")
            notes.append(f"{name}: {text[:60]!r} is not a UTC date esxdiag reads: sample times unknown")
    return None
