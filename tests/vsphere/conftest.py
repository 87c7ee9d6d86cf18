"""Shared fixtures for the vSphere collector tests: the vcsim lab and credential helpers.

The lab (tests/lab/vcsim_lab.py) is loaded by path: with --import-mode=importlib tests cannot
import each other. Lab tests are marked ``lab``; every wait inside the lab is bounded.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from esxdiag.collectors.credentials import Credentials, resolve_credentials
from esxdiag.collectors.vsphere import connect

LAB_FILE = Path(__file__).resolve().parents[1] / "lab" / "vcsim_lab.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def load_lab_module():
    spec = importlib.util.spec_from_file_location("esxdiag_tests_vcsim_lab", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lab_creds(lab, **overrides) -> Credentials:
    """Credentials for a lab as a user would give them: URL + user explicit, password from env."""
    password = overrides.pop("password", lab.password)
    return resolve_credentials(lab.url, overrides.pop("username", lab.username),
                               env={"ESXDIAG_PASSWORD": password}, config_path=os.devnull, **overrides)


@pytest.fixture(scope="session")
def lab_creds():
    """lab_creds(lab, insecure=..., thumbprint=..., password=...) -> Credentials."""
    return _lab_creds


@pytest.fixture(scope="session")
def lab_module():
    return load_lab_module()


@pytest.fixture(scope="session")
def vcsim_lab(lab_module, tmp_path_factory):
    """The scenario inventory on vcsim itself: these tests read vcsim's own answers (its random perf
    values and sample counts included), not the lab's perf proxy that tests/live goes through."""
    lab = lab_module.start_lab(tmp_path_factory.mktemp("vcsim"), perf_proxy=False)
    yield lab
    lab.stop()


@pytest.fixture(scope="session")
def scenarios(lab_module):
    return json.loads(Path(lab_module.SCENARIOS).read_text())


@pytest.fixture(scope="session")
def session(vcsim_lab):
    live = connect(_lab_creds(vcsim_lab, insecure=True), timeout_s=10)
    yield live
    live.close()


@pytest.fixture(scope="module")
def two_hosts(lab_module, tmp_path_factory):
    """vcsim alone with one cluster of two hosts (DC0_C0_H0, DC0_C0_H1) and two VMs, for migrations:
    (lab, session)."""
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("two-hosts"),
                                 ("-cluster", "1", "-host", "2", "-standalone-host", "0", "-vm", "2"))
    try:
        live = connect(_lab_creds(lab, insecure=True), timeout_s=10)
        yield lab, live
        live.close()
    finally:
        lab.stop()
