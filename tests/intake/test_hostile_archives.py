"""Tarballs from strangers: nothing leaves the unpack directory, links are never followed or
written, sizes and member counts are capped; every refusal is one line naming the archive."""

from __future__ import annotations

import io
import tarfile

import pytest

from esxdiag.intake import archive

NET = "sos_commands/networking"


def _tar(path, members):
    """members: (name, bytes | None, kind, linkname)"""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind, link in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link or ""
            info.size = len(data or b"")
            tar.addfile(info, io.BytesIO(data) if data else None)
    return path


def _sos(tmp_path, *extra):
    ok = (f"sosreport-x/{NET}/ethtool_-S_eth0", b"NIC statistics:\n", tarfile.REGTYPE, None)
    return _tar(tmp_path / "sosreport-x.tar.gz", [ok, *extra])


@pytest.mark.parametrize("name", ["sosreport-x/../../escaped", "/etc/cron.d/evil", "../escaped",
                                  f"sosreport-x/{NET}/../../../../escaped"])
def test_traversal_and_absolute_names_refuse_the_archive(tmp_path, kit, name):
    src = _sos(tmp_path, (name, b"pwned\n", tarfile.REGTYPE, None))
    proc = kit.run("analyze", src)
    assert proc.returncode == 2 and "points outside the archive" in proc.stderr and str(src) in proc.stderr
    assert not any(p.name == "escaped" for p in tmp_path.rglob("*"))
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kind, link", [(tarfile.SYMTYPE, "/etc/passwd"), (tarfile.LNKTYPE, "/etc/passwd"),
                                        (tarfile.SYMTYPE, "../../../../etc/shadow")])
def test_links_are_never_written_or_followed(tmp_path, kit, kind, link):
    src = _sos(tmp_path, (f"sosreport-x/{NET}/ethtool_-g_eth0", None, kind, link))
    skipped: list[tuple[str, str]] = []
    out = archive.unpack(src, tmp_path / "out", lambda p: True, skipped)
    assert not (out / NET / "ethtool_-g_eth0").exists() and not (out / NET / "ethtool_-g_eth0").is_symlink()
    assert skipped == [(f"sosreport-x.tar.gz:sosreport-x/{NET}/ethtool_-g_eth0", "a link, not read")]
    proc = kit.run("analyze", src, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "root:" not in proc.stdout


def test_huge_member_is_skipped_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 1000)
    src = _sos(tmp_path, (f"sosreport-x/{NET}/netstat_-s", b"Tcp:\n" + b" " * 5000, tarfile.REGTYPE, None))
    skipped: list[tuple[str, str]] = []
    out = archive.unpack(src, tmp_path / "out", lambda p: True, skipped)
    assert not (out / NET / "netstat_-s").exists()
    assert skipped[0][0].endswith("netstat_-s") and skipped[0][1].startswith("5005 bytes, over the")


def test_total_size_and_member_count_caps_refuse_the_archive(tmp_path, monkeypatch):
    members = [(f"sosreport-x/{NET}/ethtool_-S_eth{n}", b"x" * 600, tarfile.REGTYPE, None) for n in range(5)]
    src = _tar(tmp_path / "sosreport-x.tar.gz", members)
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 2000)
    with pytest.raises(archive.IntakeError, match="MiB to unpack"):
        archive.unpack(src, tmp_path / "a", lambda p: True, [])
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 10**9)
    monkeypatch.setattr(archive, "MAX_MEMBERS", 3)
    with pytest.raises(archive.IntakeError, match="more than 3 members"):
        archive.unpack(src, tmp_path / "b", lambda p: True, [])


def test_default_caps_hold_a_real_bomb_shape(tmp_path, kit):
    """A 64 MiB run of zeros compresses to ~64 KiB: over the per-member cap, it is skipped, not read."""
    big = tmp_path / "sosreport-bomb.tar.gz"
    with tarfile.open(big, "w:gz") as tar:
        info = tarfile.TarInfo(f"sosreport-bomb/{NET}/ethtool_-S_eth0")
        info.size = 64 * 2**20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert big.stat().st_size < 1 * 2**20
    proc = kit.run("analyze", big, "--format", "json")
    assert proc.returncode == 2 and "ethtool_-S_eth0: 67108864 bytes, over the 32 MiB cap" in proc.stderr


def test_not_a_tarball_is_one_line(tmp_path, kit):
    bad = tmp_path / "sosreport-broken.tar.xz"
    bad.write_bytes(b"\xfd7zXZ\x00 garbage" * 10)
    proc = kit.run("analyze", bad)
    assert proc.returncode == 2 and "not a readable tar archive" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
