"""Reads of a large (multi-part) record racing its forget: ineligible, never BLOB_MISSING."""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.adapters.dynamodb import items

from tests.integration.read_path.conftest import ReadPath, error_code, ids

TEXT = "Narwhal pipeline drains the billing backlog nightly."


@pytest.fixture
def parted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every record JSON is stored in ``REC#…#PART#…`` items instead of inline."""
    monkeypatch.setattr(items, "INLINE_RECORD_BYTES", 16)


def _forget_before_parts_are_read(read_path: ReadPath, record_id: str) -> list[Any]:
    """The forget commits after the reader got the record head, before it reads the parts."""
    forgotten: list[Any] = []

    def overtake(params: dict[str, Any], **_: Any) -> None:
        keys = next(iter(params["RequestItems"].values()))["Keys"]
        if not forgotten and any("#PART#" in key["sk"]["S"] for key in keys):
            forgotten.append(read_path.forget(record_id))

    bootstrap.dynamodb_client().meta.events.register(
        "before-parameter-build.dynamodb.BatchGetItem", overtake)
    return forgotten


def _part_keys(read_path: ReadPath, record_id: str) -> list[dict[str, Any]]:
    s = read_path.aws.settings
    return [{"pk": item["pk"], "sk": item["sk"]} for item in read_path.aws.scan(s.table_name)
            if item["sk"]["S"].startswith(f"REC#{record_id}#PART#")]


def test_get_racing_a_forget_of_a_large_record_is_not_found(
        read_path: ReadPath, parted: None) -> None:
    record_id = read_path.admit(TEXT)
    assert _part_keys(read_path, record_id)
    forgotten = _forget_before_parts_are_read(read_path, record_id)
    envelope = read_path.get(record_id)
    assert forgotten
    assert error_code(envelope) == "NOT_FOUND"


def test_search_racing_a_forget_of_a_large_record_leaves_it_out(
        read_path: ReadPath, parted: None) -> None:
    record_id = read_path.admit(TEXT)
    read_path.project()
    assert ids(read_path.search("narwhal billing")) == [record_id]
    forgotten = _forget_before_parts_are_read(read_path, record_id)
    envelope = read_path.search("narwhal billing")
    assert forgotten
    assert ids(envelope) == []


def test_a_large_record_whose_part_vanished_while_current_is_blob_missing(
        read_path: ReadPath, parted: None) -> None:
    record_id = read_path.admit(TEXT)
    for key in _part_keys(read_path, record_id):
        read_path.aws.dynamodb.delete_item(TableName=read_path.aws.settings.table_name, Key=key)
    assert error_code(read_path.get(record_id)) == "BLOB_MISSING"
