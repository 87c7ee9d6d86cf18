"""TLS verification turned off is never silent: `scan` and `serve` say it once per vCenter, with
report's and rings' own words naming what turned it off, and serve exports it per vCenter
(esxdiag_vcenter_tls_verified 0). The vCenter here is a closed port on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from esxdiag.cli import main

WARNING = "warning: TLS certificate verification is OFF for 127.0.0.1:9 ({}): anyone on the path can read the " \
          "vCenter password"


@pytest.mark.parametrize("flag, env, why", [(["--insecure"], {}, "--insecure"),
                                            ([], {"ESXDIAG_INSECURE": "1"}, "ESXDIAG_INSECURE=1"),
                                            ([], {"GOVC_INSECURE": "1"}, "GOVC_INSECURE=1")])
def test_scan_warns_per_vcenter_when_tls_is_not_verified(tmp_path, capsys, monkeypatch, flag, env, why):
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    for name in ("ESXDIAG_INSECURE", "GOVC_INSECURE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    main(["scan", "--vcenter", "https://127.0.0.1:9/sdk", "--user", "u", "--no-history", "--timeout", "5",
          "-o", str(tmp_path / "fleet.json"), *flag])
    assert capsys.readouterr().err.count(WARNING.format(why)) == 1


def test_scan_with_verification_on_says_nothing_of_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    for name in ("ESXDIAG_INSECURE", "GOVC_INSECURE"):
        monkeypatch.delenv(name, raising=False)
    main(["scan", "--vcenter", "https://127.0.0.1:9/sdk", "--user", "u", "--no-history", "--timeout", "5",
          "-o", str(tmp_path / "fleet.json")])
    assert "verification is OFF" not in capsys.readouterr().err


def test_serve_logs_the_warning_and_exports_it_per_vcenter(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))},
           "ESXDIAG_PASSWORD": "x"}
    log = open(tmp_path / "serve.log", "w+")
    process = subprocess.Popen([sys.executable, "-m", "esxdiag", "serve", "--vcenter", "https://127.0.0.1:9/sdk",
                                "--vcenter", "https://127.0.0.2:9/sdk", "--user", "u",
                                "--insecure", "--listen", "127.0.0.1:0", "--interval", "600",
                                "--history", str(tmp_path / "h.sqlite"), "--data-dir", str(tmp_path / "data")],
                               env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        text = ""
        for _ in range(600):
            text = (tmp_path / "serve.log").read_text()
            if "listening on" in text or process.poll() is not None:
                break
            time.sleep(0.1)
        assert "listening on" in text, text
        url = text.split("listening on ", 1)[1].split()[0]
        with urllib.request.urlopen(url + "metrics", timeout=20) as response:
            metrics = response.read().decode()
        assert 'esxdiag_vcenter_tls_verified{vcenter="127.0.0.1:9"} 0.0' in metrics
        assert 'esxdiag_vcenter_tls_verified{vcenter="127.0.0.2:9"} 0.0' in metrics
        text = (tmp_path / "serve.log").read_text()
        assert text.count("TLS certificate verification is OFF for 127.0.0.1:9 (--insecure)") == 1
        assert text.count("TLS certificate verification is OFF for 127.0.0.2:9 (--insecure)") == 1
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        log.close()
