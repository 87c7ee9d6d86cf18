"""Runs started together never share an output (issue 15, point 4): default bundle folders, scan
folders and snapshot files are created exclusively, with -2, -3 ... when the name is taken."""

from __future__ import annotations

import threading

import pytest

from esxdiag.bundle import UNIQUE_ATTEMPTS, create_unique, remove_if_empty
from esxdiag.errors import BundleError


def _together(n: int, make) -> list:
    """Call make() from n threads released at the same instant."""
    barrier, results, errors = threading.Barrier(n), [], []

    def run():
        barrier.wait()
        try:
            results.append(make())
        except Exception as exc:  # collected: the assertion below shows it
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    return results


def test_default_bundle_folders_of_runs_started_in_the_same_second_differ(tmp_path, monkeypatch):
    from esxdiag.cli import live

    monkeypatch.setattr(live, "stamp", lambda: "20261123T024555Z")  # every run in the same second
    made = _together(8, lambda: live.default_bundle("web 01", tmp_path))
    names = sorted(p.name for p in made)
    assert len(set(names)) == 8 and all(p.is_dir() for p in made)
    assert names[0] == "esxdiag-web_01-20261123T024555Z"
    assert set(names[1:]) == {f"esxdiag-web_01-20261123T024555Z-{n}" for n in range(2, 9)}


def test_unique_files_and_folders_are_exclusive_and_bounded(tmp_path):
    files = _together(6, lambda: create_unique(tmp_path, "esxdiag-scan-X", ".json", directory=False))
    assert len({p.name for p in files}) == 6 and all(p.is_file() and p.suffix == ".json" for p in files)
    (tmp_path / "taken").mkdir()
    for n in range(2, UNIQUE_ATTEMPTS + 1):
        (tmp_path / f"taken-{n}").mkdir()
    with pytest.raises(BundleError, match="taken, and so are -2 .. -100"):
        create_unique(tmp_path, "taken")
    empty = create_unique(tmp_path, "empty")
    remove_if_empty(empty)
    assert not empty.exists()
    kept = create_unique(tmp_path, "kept")
    (kept / "manifest.json").write_text("{}")
    remove_if_empty(kept)
    assert kept.is_dir()
