"""The scan without workers asks for the next inventory page while this page's share (vNICs, QueryPerf)
runs (esxdiag.collectors.fleet.scan._ReadAhead); errors and closing stay as with the plain pages."""

from __future__ import annotations

import threading

import pytest

from esxdiag.collectors.fleet.scan import _ReadAhead
from esxdiag.errors import CollectionError

WAIT_S = 10


def test_the_next_page_is_requested_while_the_caller_works_on_this_one():
    second_requested = threading.Event()

    def pages():
        yield ["vm-1"], True
        second_requested.set()
        yield ["vm-2"], False

    with _ReadAhead(pages()) as each:
        assert next(each) == (["vm-1"], True)
        assert second_requested.wait(WAIT_S)  # before the caller asks for it
        assert list(each) == [(["vm-2"], False)]


def test_a_failed_page_is_raised_where_the_caller_takes_it():
    def pages():
        yield ["vm-1"], True
        raise CollectionError("127.0.0.1:443: reading the inventory: the session ended", kind="auth")

    with _ReadAhead(pages()) as each:
        assert next(each) == (["vm-1"], True)
        with pytest.raises(CollectionError, match="the session ended") as caught:
            next(each)
    assert caught.value.kind == "auth"


def test_closing_early_waits_for_the_page_in_flight_then_closes_the_pages():
    in_flight, release, closed = threading.Event(), threading.Event(), threading.Event()

    def pages():
        try:
            yield ["vm-1"], True
            in_flight.set()
            release.wait(WAIT_S)
            yield ["vm-2"], True
            yield ["vm-3"], False
        finally:
            closed.set()

    reader = _ReadAhead(pages())
    each = reader.__enter__()
    assert next(each) == (["vm-1"], True)
    assert in_flight.wait(WAIT_S)
    threading.Timer(0.2, release.set).start()
    reader.__exit__(None, None, None)  # a stop between pages: no "generator already executing"
    assert release.is_set() and closed.is_set()
