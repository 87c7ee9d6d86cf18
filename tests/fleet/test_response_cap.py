"""Every SOAP answer has a size cap, whichever decoder reads it: an answer past
soap_stream.MAX_RESPONSE_BYTES is refused while it is read, with one line naming the vCenter and
the call, and the connection it came on is dropped. vcsim's inventory pages are the big answers;
the cap is lowered here so that they pass it."""

from __future__ import annotations

import pytest

from esxdiag.collectors import soap_stream
from esxdiag.collectors.fleet import ScanOptions, scan
from esxdiag.collectors.vsphere_session import api_errors, connect
from esxdiag.errors import CollectionError

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("fast", ["1", "0"])
def test_an_answer_past_the_cap_fails_its_vcenter_in_one_line(fleet_lab, creds_for, monkeypatch, fast):
    monkeypatch.setenv(soap_stream.SWITCH, fast)
    creds = creds_for(fleet_lab)
    whole = scan([creds], ScanOptions(window_s=60, workers=1))
    assert whole["vcenters"][0]["status"] == "scanned"

    monkeypatch.setattr(soap_stream, "MAX_RESPONSE_BYTES", 20_000)
    capped = scan([creds], ScanOptions(window_s=60, workers=1))
    (status,) = capped["vcenters"]
    assert status["status"] == "failed" and status["error_kind"] == "query"
    assert "larger than 20,000 bytes; refused" in status["error"] and "\n" not in status["error"]
    assert status["error"].startswith(f"{creds.host}:{creds.port}: ")


def test_after_a_refused_answer_the_session_goes_on(fleet_lab, creds_for, monkeypatch):
    session = connect(creds_for(fleet_lab), timeout_s=30)
    try:
        monkeypatch.setattr(soap_stream, "MAX_RESPONSE_BYTES", 300)
        with pytest.raises(CollectionError, match="reading the folders: the server's answer is larger than 300 bytes"):
            with api_errors(session, "reading the folders"):
                session.content.rootFolder.childEntity  # noqa: B018 - one RetrieveProperties call
        monkeypatch.setattr(soap_stream, "MAX_RESPONSE_BYTES", 100_000)
        with api_errors(session, "reading the folders"):
            assert session.content.rootFolder.childEntity  # on a new connection: the refused one was dropped
    finally:
        session.close()
