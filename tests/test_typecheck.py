"""scripts/typecheck: mypy over the installed layout (reports/ is esxdiag.reports), a type error fails
the run, and its message names the repository's own file."""

from __future__ import annotations

import shutil
import subprocess
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _repository(tmp_path: Path, bad_line: str) -> Path:
    """A small repository laid out like this one: esxdiag/ and reports/ mapped to esxdiag.reports."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "typecheck", tmp_path / "scripts" / "typecheck")
    (tmp_path / "setup.cfg").write_text("[options]\npackage_dir =\n    esxdiag = esxdiag\n"
                                        "    esxdiag.reports = reports\n")
    (tmp_path / "pyproject.toml").write_text('[tool.mypy]\nfiles = ["esxdiag/reports"]\n')
    (tmp_path / "esxdiag").mkdir()
    (tmp_path / "esxdiag" / "__init__.py").write_text("")
    (tmp_path / "esxdiag" / "numbers.py").write_text("def double(n: int) -> int:\n    return 2 * n\n")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "__init__.py").write_text("")
    (tmp_path / "reports" / "page.py").write_text(f"from esxdiag.numbers import double\n\n{bad_line}\n")
    return tmp_path


def _typecheck(repository: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(repository / "scripts" / "typecheck")], capture_output=True,
                          text=True, timeout=120)


def test_a_type_error_fails_and_names_the_repository_file(tmp_path):
    checked = _typecheck(_repository(tmp_path, 'shown: str = double(2)'))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.startswith("reports/page.py:3: error: Incompatible types in assignment"), checked.stdout


def test_imports_across_the_mapping_resolve(tmp_path):
    checked = _typecheck(_repository(tmp_path, 'shown: int = double(2)'))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_configuration_checks_the_typed_packages():
    block = re.search(r"^\[tool\.mypy\]\n.*?^files = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S)
    files = re.findall(r'"([^"]+)"', block.group(1))
    assert {"esxdiag/result.py", "esxdiag/engine.py", "esxdiag/parsers", "esxdiag/join", "esxdiag/rules",
            "esxdiag/reports"} <= set(files)
