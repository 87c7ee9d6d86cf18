"""Reading a .tar.xz / .tar.gz / .tgz from a stranger: only the members asked for are written, by
esxdiag itself (never tarfile.extract), under names it checked; links, devices, absolute names and
'..' never leave the archive; caps on member count, member size and total bytes."""

from __future__ import annotations

import lzma
import os
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Callable

from esxdiag.intake.found import IntakeError

MAX_MEMBERS = 200_000
MAX_MEMBER_BYTES = 32 * 2**20
MAX_TOTAL_BYTES = 256 * 2**20  # written out
MAX_SCANNED_BYTES = 8 * 2**30  # declared sizes of every member read past
SUFFIXES = (".tar.xz", ".tar.gz", ".tgz", ".tar", ".txz", ".tar.bz2")


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(SUFFIXES)


def member_name(name: str, archive: Path) -> PurePosixPath:
    """The member's path inside the archive's top folder; refuses names that would leave it."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith("/") or ".." in path.parts or "\x00" in name:
        raise IntakeError(f"{archive}: member {name[:120]!r} points outside the archive: refusing the archive")
    return PurePosixPath(*[p for p in path.parts if p not in ("", ".")])


def unpack(archive: Path, dest: Path, wanted: Callable[[PurePosixPath], bool], skipped: list[tuple[str, str]],
           strip_top: bool = True) -> Path:
    """Write the wanted regular-file members under dest; returns dest. Every refusal is named."""
    dest.mkdir(parents=True, exist_ok=True)
    written = scanned = count = 0
    try:
        with tarfile.open(archive, "r:*") as tar:
            while (member := tar.next()) is not None:
                count += 1
                if count > MAX_MEMBERS:
                    raise IntakeError(f"{archive}: more than {MAX_MEMBERS} members: refusing the archive")
                scanned += max(member.size, 0)
                if scanned > MAX_SCANNED_BYTES:
                    raise IntakeError(f"{archive}: more than {MAX_SCANNED_BYTES // 2**30} GiB of members")
                name = member_name(member.name, archive)
                inner = PurePosixPath(*name.parts[1:]) if strip_top and len(name.parts) > 1 else name
                if not inner.parts or not wanted(inner):
                    continue
                if not member.isfile():
                    kind = "a link" if member.issym() or member.islnk() else "not a regular file"
                    skipped.append((f"{archive.name}:{member.name}", f"{kind}, not read"))
                    continue
                if member.size > MAX_MEMBER_BYTES:
                    skipped.append((f"{archive.name}:{member.name}",
                                    f"{member.size} bytes, over the {MAX_MEMBER_BYTES // 2**20} MiB cap, not read"))
                    continue
                source = tar.extractfile(member)
                data = source.read(MAX_MEMBER_BYTES + 1) if source else b""
                written += len(data)
                if written > MAX_TOTAL_BYTES:
                    raise IntakeError(f"{archive}: more than {MAX_TOTAL_BYTES // 2**20} MiB to unpack")
                target = dest.joinpath(*inner.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_symlink() or (target.exists() and not target.is_file()):
                    raise IntakeError(f"{archive}: member {member.name!r} collides with another: refusing")
                target.write_bytes(data)
                if 0 < member.mtime < 2**33:  # keeps the order of captures told by modification times
                    os.utime(target, (member.mtime, member.mtime))
    except (tarfile.TarError, EOFError, OSError, ValueError, lzma.LZMAError, zlib.error) as exc:
        raise IntakeError(f"{archive}: not a readable tar archive ({exc})") from None
    return dest
