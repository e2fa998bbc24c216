"""Connect's momentary 409s (a rebalance, a config older than the config topic's, as when
another connector is created at that moment) are asked again; any other answer is not. A
loopback HTTP server stands in for Connect and answers what the test scripts."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from cdcmirror.clients.connect import ConnectClient, momentary
from cdcmirror.exceptions import ConnectorError

STALE = (
    "Cannot complete request momentarily due to stale configuration (typically caused by "
    "a concurrent config change)"
)


@contextmanager
def scripted(answers: list[tuple[int, str]]) -> Iterator[tuple[ConnectClient, list[str]]]:
    """A client of a server that answers each request with the next of ``answers`` (the
    last one again once they run out); yields it and the requests seen."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_DELETE(self) -> None:
            seen.append(f"DELETE {self.path}")
            code, message = answers[min(len(seen), len(answers)) - 1]
            body = json.dumps({"error_code": code, "message": message}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) if code != 204 else 0))
            self.end_headers()
            if code != 204:
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = ConnectClient(f"http://127.0.0.1:{server.server_address[1]}", 5)
        client.conflict_wait = 1.5
        yield client, seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_stale_config_409_is_asked_again_until_it_passes() -> None:
    with scripted([(409, STALE), (409, STALE), (204, "")]) as (client, seen):
        client.reset_offsets("c")
    assert seen == ["DELETE /connectors/c/offsets"] * 3


def test_a_409_that_lasts_ends_in_an_error_naming_it() -> None:
    with scripted([(409, STALE)]) as (client, seen), pytest.raises(ConnectorError) as err:
        client.reset_offsets("c")
    assert "stale configuration" in str(err.value) and "asked again for 2 s" in str(err.value)
    assert len(seen) >= 3


@pytest.mark.parametrize(
    "answer", [(409, "Connector c already exists"), (400, "Connectors must be STOPPED")]
)
def test_other_errors_are_not_asked_again(answer: tuple[int, str]) -> None:
    with scripted([answer]) as (client, seen), pytest.raises(ConnectorError, match=answer[1]):
        client.reset_offsets("c")
    assert len(seen) == 1


def test_momentary_409s_are_connects_rebalance_and_stale_config_answers() -> None:
    assert momentary(409, STALE)
    assert momentary(
        409, "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
    )
    assert not momentary(409, "Connector c already exists")
    assert not momentary(500, STALE)
    # a read while the workers are about to rebalance (seen under parallel tests)
    assert momentary(500, "Request cannot be completed because a rebalance is expected")
    assert not momentary(500, "Failed to find any class that implements Connector")
