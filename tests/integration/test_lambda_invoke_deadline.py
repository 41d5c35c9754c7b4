"""The endpoint's tool invoke: one attempt, waiting no longer than the endpoint has left.

A local HTTP server plays the Lambda Invoke API and answers too late; the invoker under
test is the one the endpoint builds (``lambda_invoker``: real botocore config).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from engram_memory.adapters.lambda_invoker import (
    CONNECT_TIMEOUT_S,
    RESPONSE_MARGIN_S,
    InvocationDeadline,
    LambdaInvoker,
    lambda_invoker,
)
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import MutationOutcomeUnknown, StoreUnavailable

SLOW_ANSWER_S = 6.0


class SlowLambda(BaseHTTPRequestHandler):
    """Counts Invoke requests and answers each after SLOW_ANSWER_S."""

    received: ClassVar[list[float]] = []

    def do_POST(self) -> None:
        SlowLambda.received.append(time.monotonic())
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        time.sleep(SLOW_ANSWER_S)
        body = b'{"ok": true}'
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up: that is the point

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def slow_lambda(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing"}.items():
        monkeypatch.setenv(name, value)
    SlowLambda.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowLambda)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _invoker(url: str, remaining_ms: int) -> LambdaInvoker:
    deadline = InvocationDeadline()
    deadline.bind(lambda: remaining_ms)
    return lambda_invoker({Tool.CAPTURE: "fn-capture", Tool.SEARCH: "fn-search"},
                          region="eu-west-1", endpoint_url=url, deadline=deadline)


def test_a_late_tool_answer_is_waited_for_once_within_the_time_left(slow_lambda: str) -> None:
    # 4.5 s left: 4.5 - 2 (connect) - 1 (margin) -> a 1 s read timeout, one attempt.
    invoker = _invoker(slow_lambda, 4_500)
    started = time.monotonic()
    with pytest.raises(MutationOutcomeUnknown):
        invoker.invoke(Tool.CAPTURE, {"tool": "capture"})
    waited = time.monotonic() - started
    # Gave up at the 1 s read timeout (slack for a loaded machine), not at the late answer.
    assert 1.0 <= waited < SLOW_ANSWER_S - 2
    assert len(SlowLambda.received) == 1  # never retried


def test_a_late_read_answer_is_store_unavailable(slow_lambda: str) -> None:
    with pytest.raises(StoreUnavailable):
        _invoker(slow_lambda, 4_500).invoke(Tool.SEARCH, {})
    assert len(SlowLambda.received) == 1


def test_without_time_left_the_tool_is_not_invoked(slow_lambda: str) -> None:
    with pytest.raises(StoreUnavailable):
        _invoker(slow_lambda, 3_900).invoke(Tool.CAPTURE, {})
    assert SlowLambda.received == []


@pytest.mark.parametrize(("remaining_ms", "expected_s"), [
    (29_000, 26), (28_950, 25), (10_000, 7), (4_000, 1), (3_999, 0)])
def test_the_read_timeout_is_the_time_left_minus_connect_and_margin(
        remaining_ms: int, expected_s: int) -> None:
    deadline = InvocationDeadline()
    deadline.bind(lambda: remaining_ms)
    assert deadline.read_timeout_s() == expected_s
    assert expected_s + CONNECT_TIMEOUT_S + RESPONSE_MARGIN_S <= remaining_ms / 1000
