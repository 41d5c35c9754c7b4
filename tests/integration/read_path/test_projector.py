from __future__ import annotations

import json
from typing import Any

from engram_memory.adapters.dynamodb.projection_store import space
from engram_memory.adapters.dynamodb.stream_reader import DynamoStreamReader
from engram_memory.domain.context import Scope
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from tests.integration.read_path.conftest import ReadPath, ids


def _stream_records(read_path: ReadPath) -> list[dict[str, Any]]:
    reader = DynamoStreamReader.from_settings(read_path.aws.settings)
    arn = reader.stream_arn()
    assert arn is not None
    records: list[dict[str, Any]] = []
    for shard in reader.shard_ids(arn):
        records.extend(reader.read(arn, shard, None, 1000))
    return records


def _record_events(read_path: ReadPath) -> list[dict[str, Any]]:
    return [r for r in _stream_records(read_path)
            if r["dynamodb"]["Keys"]["sk"]["S"].startswith("REC#")]


def _projector(read_path: ReadPath, records: list[dict[str, Any]]) -> dict[str, Any]:
    handler = read_path.handler("projector")
    response: dict[str, Any] = handler({"Records": records}, LocalLambdaContext("projector"))
    return response


def _stats(read_path: ReadPath) -> dict[str, int]:
    s = read_path.aws.settings
    item = read_path.aws.dynamodb.get_item(TableName=s.projection_table_name, Key={
        "pk": {"S": f"STATS#{space(Scope(s.tenant_id, 'ws-main'))}"},
        "sk": {"S": "STATS"}})["Item"]
    # The watermark (wm) rides on the stats item but is no statistic.
    return {k: int(v["N"]) for k, v in item.items() if "N" in v and k != "wm"}


def _postings(read_path: ReadPath) -> list[dict[str, Any]]:
    """The posting block items that hold postings (a band's empty head block holds none)."""
    items = read_path.aws.scan(read_path.aws.settings.projection_table_name)
    return [i for i in items if i["pk"]["S"].startswith("POST#") and "p" in i]


def test_replaying_a_stream_batch_never_counts_a_record_twice(read_path: ReadPath) -> None:
    read_path.admit("Eland metrics pipeline.")
    read_path.admit("Fossa log retention.")
    events = _stream_records(read_path)
    for _ in range(3):
        assert _projector(read_path, events) == {"batchItemFailures": []}
    stats = _stats(read_path)
    assert stats["n"] == 2
    first_postings = _postings(read_path)
    assert read_path.project() >= 0
    assert _stats(read_path) == stats
    assert _postings(read_path) == first_postings


def test_a_failing_record_is_reported_alone_in_the_partial_batch_response(
    read_path: ReadPath,
) -> None:
    good = read_path.admit("Gazelle release train.")
    s = read_path.aws.settings
    broken_id = "mem_" + "z" * 52
    read_path.aws.dynamodb.put_item(TableName=s.table_name, Item={
        "pk": {"S": f"SCOPE#{s.tenant_id}#ws-main"}, "sk": {"S": f"REC#{broken_id}"},
        "state": {"S": "accepted_current"}, "record_json": {"S": "{not json"},
        "record_digest": {"S": "sha256:" + "0" * 64}, "valid_t": {"N": "0"},
        "recorded_cursor": {"N": "1"},
    })
    events = _record_events(read_path)
    broken = [e for e in events if e["dynamodb"]["Keys"]["sk"]["S"] == f"REC#{broken_id}"]
    response = _projector(read_path, events)
    assert response == {"batchItemFailures": [
        {"itemIdentifier": broken[0]["dynamodb"]["SequenceNumber"]}]}
    assert ids(read_path.search("gazelle")) == [good]


def test_a_replayed_insert_after_forget_does_not_resurrect_postings(read_path: ReadPath) -> None:
    record_id = read_path.admit("Hyena cron schedule.")
    insert = [e for e in _record_events(read_path) if e["eventName"] == "INSERT"]
    read_path.project()
    read_path.forget(record_id)
    read_path.project()
    assert _postings(read_path) == []
    assert _projector(read_path, insert) == {"batchItemFailures": []}
    assert _postings(read_path) == []
    assert _stats(read_path)["n"] == 0


def test_removal_restores_the_scope_statistics_exactly(read_path: ReadPath) -> None:
    keep = read_path.admit("Impala build cache.")
    read_path.project()
    before = _stats(read_path)
    gone = read_path.admit("Jerboa canary rollout with many many extra words here.")
    read_path.project()
    assert _stats(read_path)["n"] == before["n"] + 1
    read_path.forget(gone)
    read_path.project()
    assert _stats(read_path) == before
    assert ids(read_path.search("impala jerboa")) == [keep]


def test_the_projection_holds_no_candidate_or_blob_material(read_path: ReadPath) -> None:
    read_path.call_capture_only("Koala secret pending text.")
    read_path.admit("Lemur accepted text.")
    read_path.project()
    # Binary posting blocks are read as latin-1, so text inside them would show here too.
    dump = json.dumps(read_path.aws.scan(read_path.aws.settings.projection_table_name),
                      default=lambda value: bytes(value).decode("latin-1"))
    assert "koala" not in dump
    assert "cand_" not in dump
    assert "lemur" in dump
