"""Reading a mem0 export and sending it: both forms streamed, a malformed file refused before
any request, duplicates judged, bounded batches, unsettled memories sent again (no service)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import IO, Any

import pytest
from engram_memory.cli import import_mem0
from engram_memory.cli.host_client import HostCallFailed
from engram_memory.cli.import_mem0 import (
    MAX_STALLS,
    ExportInvalid,
    Report,
    Transient,
    memories,
    migrate,
    send_all,
    to_wire,
)
from engram_memory.gate.migration import MAX_BATCH, MAX_BATCH_BYTES

from tests.fixtures import mem0_export


@pytest.fixture(autouse=True)
def _small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny chunks: every value straddles a read boundary somewhere.
    monkeypatch.setattr(import_mem0, "READ_BYTES", 7)


def _file(export: object) -> Callable[[], IO[str]]:
    text = json.dumps(export, ensure_ascii=False)
    return lambda: io.StringIO(text)


def _no_sleep(_: float) -> None:
    pass


def _settle_all(sent: list[list[dict[str, Any]]]) -> import_mem0.Post:
    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        sent.append(batch)
        return [{"id": m["id"], "status": "imported"} for m in batch]
    return post


def test_the_bare_list_and_the_wrapped_form_stream_the_same_memories() -> None:
    bare = list(memories(io.StringIO(json.dumps(mem0_export.build(), ensure_ascii=False))))
    wrapped = {"relations": [{"source": "a", "target": "b"}], "count": 12345, "next": None,
               "results": mem0_export.build()}
    streamed = list(memories(io.StringIO(json.dumps(wrapped, ensure_ascii=False))))
    assert bare == streamed == mem0_export.build()
    assert list(memories(io.StringIO(" [ ] "))) == []


@pytest.mark.parametrize("text", ["", "{}", '{"results": 3}', "[{]", '"x"', "[1,"])
def test_a_file_that_is_not_an_export_is_refused(text: str) -> None:
    with pytest.raises(ExportInvalid):
        list(memories(io.StringIO(text)))


def test_mapping_keeps_id_text_times_owner_and_drops_the_rest() -> None:
    item = mem0_export.memory(4)  # user memory, updated 5 minutes after creation
    wire = to_wire(item)
    assert set(wire) == {"id", "memory", "created_at_ms", "updated_at_ms", "user_id"}
    assert wire["updated_at_ms"] - wire["created_at_ms"] == 5 * 60 * 1000
    naive = to_wire({"id": "a1", "memory": "m", "created_at": "2024-01-01T00:00:00"})
    assert naive["created_at_ms"] == 1_704_067_200_000
    offset = to_wire({"id": "a3", "memory": "m", "created_at": "2024-01-01T00:00:00-07:00",
                      "updated_at": None, "metadata": None, "hash": "x"})
    assert offset["created_at_ms"] == 1_704_067_200_000 + 7 * 3_600_000
    decomposed = to_wire({"id": "a2", "memory": "Cafe\u0301", "updated_at": "2024-01-01Z"})
    assert decomposed["memory"] == "Caf\u00e9"


@pytest.mark.parametrize("broken", [
    {"memory": "m", "created_at": "2024-01-01"},
    {"id": "a", "memory": " ", "created_at": "2024-01-01"},
    {"id": "a", "memory": "m"},
    {"id": "a", "memory": "m", "created_at": "yesterday"},
    {"id": "a", "memory": "m", "created_at": 1704067200},
    {"id": "a", "memory": "m", "created_at": "2024-01-01", "user_id": 7},
    {"id": "has space", "memory": "m", "created_at": "2024-01-01"},
    {"id": "a", "memory": "x" * 70_000, "created_at": "2024-01-01"},
    ["not", "an", "object"],
])
def test_one_malformed_entry_refuses_the_file_before_any_request(broken: object) -> None:
    sent: list[list[dict[str, Any]]] = []
    export = [*mem0_export.build()[:30], broken]
    with pytest.raises(ExportInvalid) as refused:
        migrate(_file(export), _settle_all(sent), _no_sleep)
    assert sent == []
    assert refused.value.reason.startswith("entry 30:")
    assert "x" * 20 not in refused.value.reason  # where, never what


def test_one_id_with_two_contents_refuses_the_file_before_any_request() -> None:
    sent: list[list[dict[str, Any]]] = []
    export = [*mem0_export.build(), {**mem0_export.memory(30), "memory": "other text"}]
    with pytest.raises(ExportInvalid) as refused:
        migrate(_file(export), _settle_all(sent), _no_sleep)
    assert sent == []
    assert "two contents" in refused.value.reason
    assert "other text" not in refused.value.reason


def test_duplicates_within_the_file_are_sent_once_and_reported() -> None:
    sent: list[list[dict[str, Any]]] = []
    report = migrate(_file(mem0_export.wrapped()), _settle_all(sent), _no_sleep).as_json()
    ids = [m["id"] for batch in sent for m in batch]
    assert len(ids) == mem0_export.DISTINCT == len(set(ids))
    assert report["imported"] == mem0_export.DISTINCT
    assert len(report["duplicates"]["same_id"]) == mem0_export.REPEATED_IDS
    assert len(report["duplicates"]["same_content"]) == mem0_export.REPEATED_CONTENTS
    assert report["unfinished"] == []


def test_batches_are_bounded_by_count_and_by_bytes() -> None:
    big = [{"id": f"big-{n}", "memory": f"{n} " + "y" * 60_000, "created_at": "2024-01-01"}
           for n in range(20)]
    sent: list[list[dict[str, Any]]] = []
    migrate(_file([*mem0_export.build(), *big]), _settle_all(sent), _no_sleep)
    assert max(len(batch) for batch in sent) == MAX_BATCH
    for batch in sent:
        assert len(json.dumps(batch, ensure_ascii=False).encode()) <= MAX_BATCH_BYTES
    assert sum(len(batch) for batch in sent) == mem0_export.DISTINCT + len(big)


def test_deferred_retried_and_lost_batches_are_sent_again_until_each_memory_settles() -> None:
    settled: list[str] = []
    calls = 0

    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        nonlocal calls
        calls += 1
        if calls % 3 == 0:
            raise Transient  # the answer was lost in transit
        # The route gets through three memories, asks to retry the fourth, defers the rest.
        results = [{"id": m["id"], "status": "imported"} for m in batch[:3]]
        settled.extend(m["id"] for m in batch[:3])
        results += [{"id": m["id"], "status": "retry", "code": "STORE_UNAVAILABLE"}
                    for m in batch[3:4]]
        return results + [{"id": m["id"], "status": "deferred"} for m in batch[4:]]

    report = Report()
    wires = [to_wire(m) for m in mem0_export.build()[:40]]
    send_all(wires, post, report, _no_sleep)
    assert sorted(settled) == sorted(m["id"] for m in wires)  # each exactly once
    assert report.as_json()["imported"] == 40
    assert report.unfinished == []


def test_a_service_that_settles_nothing_stops_the_run_with_what_is_unfinished() -> None:
    waits: list[float] = []

    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise Transient

    report = Report()
    wires = [to_wire(m) for m in mem0_export.build()[:60]]
    send_all(wires, post, report, waits.append)
    assert sorted(report.unfinished) == sorted(m["id"] for m in wires)
    assert len(waits) == MAX_STALLS - 1
    assert report.as_json()["imported"] == 0


def test_an_answer_for_other_memories_is_refused() -> None:
    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"id": "someone-else", "status": "imported"}]

    with pytest.raises(HostCallFailed):
        send_all([to_wire(mem0_export.memory(9))], post, Report(), _no_sleep)
