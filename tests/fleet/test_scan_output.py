"""`esxdiag scan -o FILE` puts its snapshot beside FILE only when FILE is a regular file: with
-o /dev/null it goes to the scan's own folder (esxdiag-scan-TIME/), never into /dev, and its path
is printed. The vCenter is a closed port on 127.0.0.1 (the snapshot is written all the same)."""

from __future__ import annotations

from pathlib import Path

from esxdiag.cli import main


def test_scan_to_dev_null_writes_its_snapshot_in_its_own_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    before = set(Path("/dev").glob("esxdiag-scan-*"))
    try:
        main(["scan", "--vcenter", "https://127.0.0.1:9/sdk", "--user", "u", "--no-history", "--timeout", "5",
              "-o", "/dev/null"])
        assert set(Path("/dev").glob("esxdiag-scan-*")) == before
    finally:
        for made in set(Path("/dev").glob("esxdiag-scan-*")) - before:
            made.unlink()
    (snapshot,) = tmp_path.glob("esxdiag-scan-*/snapshot.json")
    assert f"snapshot: {snapshot.resolve()}" in capsys.readouterr().err


def test_scan_to_a_file_keeps_its_snapshot_beside_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    (tmp_path / "out").mkdir()
    main(["scan", "--vcenter", "https://127.0.0.1:9/sdk", "--user", "u", "--no-history", "--timeout", "5",
          "-o", str(tmp_path / "out" / "fleet.json")])
    (snapshot,) = (tmp_path / "out").glob("esxdiag-scan-*.json")
    assert f"snapshot: {snapshot.resolve()}" in capsys.readouterr().err and not list(tmp_path.glob("esxdiag-scan-*"))
