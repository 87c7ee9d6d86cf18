"""analyze reads a capture whole only up to a cap, and a streamed one a line at a time up to a line
cap: a huge capture (a 1 GiB sparse file in a bundle, a 100 MB text file, an esxtop CSV whose row is
300 MB) costs neither its size in memory nor the analysis; its capture fails with one line naming
the file and the cap."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from esxdiag import textio
from esxdiag.errors import ParseError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "healthy-vm"
# prints the child's peak RSS (KiB) after running esxdiag in it: VmHWM of its own memory, not ru_maxrss, which
# Linux carries over from the parent at fork (a large pytest process would be counted as the child's)
RUN = ("import runpy, sys; sys.argv = ['esxdiag'] + sys.argv[1:]\n"
       "try:\n    runpy.run_module('esxdiag', run_name='__main__')\n"
       "except SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
       "hwm = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
       "print('maxrss', hwm, file=sys.stderr)\nsys.exit(code)\n")


def analyze(path: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESXDIAG_")}
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    done = subprocess.run([sys.executable, "-c", RUN, "analyze", str(path), "--format", "json", "-o",
                           str(tmp_path / "r.json")], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)
    rss = int(next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("maxrss")))
    return done, rss


def huge_bundle(tmp_path: Path, spec: str, size: int, text: bool = False) -> tuple[Path, Path]:
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    capture = next(c for c in manifest["captures"] if c["spec"] == spec)
    target = bundle / capture["file"]
    with open(target, "wb") as fh:
        if text:
            line = b"x" * 1023 + b"\n"
            for _ in range(size // len(line)):
                fh.write(line)
        else:
            fh.truncate(size)  # sparse: no disk, all zeros
    return bundle, target


@pytest.mark.parametrize("spec,size,text", [("vsish_rxsummary", 2**30, False), ("vsphere_perf", 2**30, False),
                                            ("ethtool_stats", 100 * 2**20, True)],
                         ids=["sparse-1GiB-vsish", "sparse-1GiB-json", "100MB-text"])
def test_a_huge_capture_is_not_read_and_is_named_with_the_cap(tmp_path, spec, size, text):
    bundle, target = huge_bundle(tmp_path, spec, size, text)
    done, rss_kib = analyze(bundle, tmp_path)
    assert done.returncode in (0, 1, 2), done.stderr
    assert rss_kib < 400 * 1024, f"peak RSS {rss_kib // 1024} MiB"  # the analysis alone is ~150 MiB
    report = (tmp_path / "r.json").read_text() if (tmp_path / "r.json").exists() else ""
    said = done.stdout + done.stderr + report
    assert target.name in said and f"over the {textio.MAX_WHOLE_FILE_BYTES // 2**20} MiB cap" in said


def test_read_capped_refuses_past_the_cap_and_reads_below_it(tmp_path):
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_bytes(b"a" * 100)
    big.write_bytes(b"a" * 101)
    assert textio.read_capped(small, cap=100) == b"a" * 100
    with pytest.raises(ParseError, match=r"big.txt: 101 bytes, over the 0 MiB cap for a file read whole; not read"):
        textio.read_capped(big, cap=100)


def test_an_esxtop_csv_with_a_row_past_the_line_cap_is_refused_in_bounded_memory(tmp_path):
    folder = tmp_path / "loose"
    folder.mkdir()
    source = next((EXAMPLE / "esxi-esx0.lab.local").glob("esxtop_batch@*.txt")).read_bytes()
    target = folder / "esxtop_batch.csv"
    with open(target, "wb") as fh:
        fh.write(source.split(b"\n", 1)[0] + b"\n")  # esxtop's header, then one 300 MB "row"
        for _ in range(300):
            fh.write(b"x" * 2**20)
        fh.write(b"\n")
    done, rss_kib = analyze(folder, tmp_path)
    assert rss_kib < 400 * 1024, f"peak RSS {rss_kib // 1024} MiB"
    said = done.stdout + done.stderr + ((tmp_path / "r.json").read_text() if (tmp_path / "r.json").exists() else "")
    assert target.name in said and f"{textio.MAX_LINE_CHARS // 2**20} Mi-character cap for a line" in said


def test_the_line_cap_reads_lines_below_it_and_refuses_a_longer_one(tmp_path, monkeypatch):
    monkeypatch.setattr(textio, "MAX_LINE_CHARS", 10)
    path = tmp_path / "lines.txt"
    path.write_text("short\n012345678\n0123456789x\n")
    with textio.open_text_stream(path) as stream:
        assert next(stream) == "short\n" and stream.readline() == "012345678\n"
        with pytest.raises(ParseError, match=r"lines.txt: a line longer than the 0 Mi-character cap"):
            next(stream)
