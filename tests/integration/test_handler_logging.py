"""Every tool handler logs its own Lambda context, even when they share one logger.

In local mode (and in tests) all six tool handlers run in one process on the runtime's
Powertools logger; a handler that did not inject its own context would log the previous
handler's function name and request id. Driven through the in-process invoker, exactly
as the local service calls them.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from engram_memory import runtime
from engram_memory.domain.context import Tool
from engram_memory.local.inprocess_invoker import InProcessInvoker, default_functions_dir

from tests.support.events import make_event

# A refusal is logged before any AWS client is built: no moto needed.
SEQUENCE = (Tool.SEARCH, Tool.CAPTURE, Tool.GET, Tool.REQUEST_ADMISSION, Tool.WITHDRAW,
            Tool.FORGET, Tool.CAPTURE, Tool.SEARCH)


@pytest.fixture
def log_records() -> Iterator[io.StringIO]:
    """The runtime logger's lines, formatted as in Lambda (JSON, one per line)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(runtime.logger.registered_formatter)
    target = logging.getLogger(runtime.SERVICE_NAME)
    target.addHandler(handler)
    try:
        yield stream
    finally:
        target.removeHandler(handler)


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_handlers_called_in_sequence_each_log_their_own_function_name(
        log_records: io.StringIO) -> None:
    invoker = InProcessInvoker(default_functions_dir())
    for index, tool in enumerate(SEQUENCE):
        event = make_event(tool, {}, audit_id=f"audit-log-{index}")
        assert invoker.invoke(tool, event)["error"]["code"] == "INVALID_SCHEMA"
    refusals = [line for line in _lines(log_records) if line["message"] == "tool refused"]
    assert [line["function_name"] for line in refusals] == [
        f"engram-{tool.value}" for tool in SEQUENCE]
    assert [line["audit_id"] for line in refusals] == [
        f"audit-log-{index}" for index in range(len(SEQUENCE))]
    # Each call has its own request id: none is carried over from the previous handler.
    request_ids = [line["function_request_id"] for line in refusals]
    assert len(set(request_ids)) == len(SEQUENCE)


def test_the_adjudication_path_logs_the_admission_functions_context(
        log_records: io.StringIO) -> None:
    invoker = InProcessInvoker(default_functions_dir())
    invoker.invoke(Tool.SEARCH, make_event(Tool.SEARCH, {}))
    envelope = invoker.invoke(Tool.REQUEST_ADMISSION, {"kind": "adjudication",
                                                       "audit_id": "adj-log-0001"})
    assert envelope["error"]["code"] == "INVALID_SCHEMA"
    [line] = [line for line in _lines(log_records)
              if line["message"] == "adjudication refused"]
    assert line["function_name"] == "engram-request_admission"
    assert line["error_code"] == "INVALID_SCHEMA"
    # Nothing stale from the search call, and nothing read from an unvalidated event.
    assert "tool" not in line
    assert "audit_id" not in line
