"""Reading a mem0 export: both forms, streamed, mapped, duplicates judged (no service)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from engram_memory.cli import import_mem0
from engram_memory.cli.import_mem0 import ExportInvalid, memories, migrate, to_wire

from tests.fixtures import mem0_export


@pytest.fixture(autouse=True)
def _small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny chunks: every value straddles a read boundary somewhere.
    monkeypatch.setattr(import_mem0, "READ_BYTES", 7)


def test_the_bare_list_and_the_wrapped_form_stream_the_same_memories() -> None:
    bare = list(memories(io.StringIO(json.dumps(mem0_export.build(), ensure_ascii=False))))
    wrapped = {"relations": [{"source": "a", "target": "b"}], "count": 12345,
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
    assert wire is not None
    assert set(wire) == {"id", "memory", "created_at_ms", "updated_at_ms", "user_id"}
    assert wire["updated_at_ms"] - wire["created_at_ms"] == 5 * 60 * 1000
    naive = to_wire({"id": "a1", "memory": "m", "created_at": "2024-01-01T00:00:00"})
    assert naive is not None
    assert naive["created_at_ms"] == 1_704_067_200_000
    decomposed = to_wire({"id": "a2", "memory": "Cafe\u0301", "updated_at": "2024-01-01Z"})
    assert decomposed is not None
    assert decomposed["memory"] == "Caf\u00e9"
    for broken in ({"memory": "m", "created_at": "2024-01-01"}, {"id": "a", "memory": " "},
                   {"id": "a", "memory": "m"}, {"id": "a", "memory": "m", "created_at": "x"}):
        assert to_wire(broken) is None


def test_duplicates_within_the_file_are_sent_once_and_reported() -> None:
    sent: list[dict[str, Any]] = []

    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assert len(batch) <= import_mem0.BATCH_SIZE
        sent.extend(batch)
        return [{"id": m["id"], "status": "imported"} for m in batch]

    items = [*mem0_export.build(), {**mem0_export.memory(30), "memory": "other text"},
             {"id": "no-time", "memory": "m"}]
    report = migrate(io.StringIO(json.dumps(items)), post).as_json()
    assert len(sent) == mem0_export.DISTINCT == len({m["id"] for m in sent})
    assert report["imported"] == mem0_export.DISTINCT
    assert len(report["duplicates"]["same_id"]) == mem0_export.REPEATED_IDS
    assert len(report["duplicates"]["same_content"]) == mem0_export.REPEATED_CONTENTS
    assert report["refused"] == {"INVALID_SCHEMA": ["no-time"],
                                 "MIGRATION_LEDGER_INVALID": [mem0_export.memory(30)["id"]]}
