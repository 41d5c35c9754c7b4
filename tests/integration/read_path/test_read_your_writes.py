"""Search sees its writes at once: the journal tail past the projection's watermark is merged.

The projector runs here only when a test drains the stream (or feeds it by hand), so
"projector stopped" is the state between two drains.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.projection_store import space
from engram_memory.adapters.dynamodb.stream_reader import DynamoStreamReader
from engram_memory.domain.context import Scope
from engram_memory.domain.instant import format_instant
from engram_memory.local.inprocess_invoker import LocalLambdaContext
from engram_memory.local.projector_pump import catch_up_watermarks

from tests.integration.read_path.conftest import ReadPath, error_code, ids

DAY_MS = 24 * 3600 * 1000


def _projection_items(read_path: ReadPath, prefix: str) -> list[dict[str, Any]]:
    items = read_path.aws.scan(read_path.aws.settings.projection_table_name)
    return [i for i in items if i["pk"]["S"].startswith(prefix)]


def _watermark(read_path: ReadPath) -> int:
    stats = _projection_items(read_path, "STATS#")
    return int(stats[0]["wm"]["N"]) if stats and "wm" in stats[0] else 0


def _value(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["ok"], envelope
    value: dict[str, Any] = envelope["output"]["value"]
    return value


def _bound(read_path: ReadPath, events: int) -> None:
    read_path.aws.configure(ENGRAM_SEARCH_TAIL_BOUND=str(events))
    read_path.rewire()


def test_an_admitted_record_is_in_the_first_search_with_the_projector_stopped(
        read_path: ReadPath) -> None:
    record_id = read_path.admit("Narwhal queue drains every night at two.")
    envelope = read_path.search("narwhal queue")  # no drain, no wait, no retry
    assert ids(envelope) == [record_id]
    assert _projection_items(read_path, "POST#") == []  # found through the tail alone
    assert _value(envelope)["rank_receipt"]["candidate_count"] == 1


def test_a_tail_longer_than_the_bound_is_projection_stale_until_the_projector_drains(
        read_path: ReadPath) -> None:
    _bound(read_path, 5)
    first = read_path.admit("Okapi ledger compaction runs hourly.")
    second = read_path.admit("Okapi ledger keeps ninety days.")
    assert set(ids(read_path.search("okapi ledger"))) == {first, second}  # 4 events ≤ 5
    third = read_path.admit("Okapi ledger shards by tenant.")  # 6 events > 5
    stale = read_path.search("okapi ledger")
    assert error_code(stale) == "PROJECTION_STALE"
    assert stale["error"]["retriable"] is True
    read_path.project()
    assert set(ids(read_path.search("okapi ledger"))) == {first, second, third}


def test_after_the_drain_the_results_equal_the_tail_merged_results_exactly(
        read_path: ReadPath) -> None:
    read_path.admit("Pangolin cache evicts cold keys first.")
    dropped = read_path.admit("Pangolin cache warms from the snapshot of yesterday.")
    read_path.admit("Quail scheduler retries failed cron jobs.")
    read_path.project()
    # Projector stopped: two admissions and a forget of an indexed record wait in the tail.
    read_path.admit("Pangolin scheduler pins the cache to one zone.", "Keep pangolin small.")
    read_path.admit("Quail cache is rebuilt by the pangolin scheduler nightly.")
    read_path.forget(dropped)
    query = "pangolin cache scheduler quail snapshot"
    merged = _value(read_path.search(query, limit=10))
    assert len(merged["records"]) == 4
    assert dropped not in [p["record"]["record_id"] for p in merged["records"]]
    head_before = merged["rank_receipt"]["system_as_of"]
    assert _watermark(read_path) < int(head_before)
    read_path.project()
    assert _watermark(read_path) == int(head_before)
    drained = _value(read_path.search(query, limit=10))
    # Same ids, scores, ranks, receipts: the whole value, byte for byte.
    assert [(p["record"]["record_id"], p["score"], p["rank"]) for p in drained["records"]] == [
        (p["record"]["record_id"], p["score"], p["rank"]) for p in merged["records"]]
    assert drained == merged


class _FailPostingsOf:
    """A DynamoDB fault: every projection write naming one record fails (a poison record)."""

    def __init__(self, record_id: str) -> None:
        self.record_id = record_id

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        if self.record_id in repr(params):
            raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}},
                              "BatchWriteItem")


class _Feeder:
    """Hands the stream to the projector handler once per record, like an event source
    mapping whose failed records have gone to the DLQ."""

    def __init__(self, read_path: ReadPath) -> None:
        self.read_path = read_path
        self.seen: set[str] = set()

    def feed(self) -> int:
        reader = DynamoStreamReader.from_settings(self.read_path.aws.settings)
        arn = reader.stream_arn()
        assert arn is not None
        fresh = [r for shard in reader.shard_ids(arn) for r in reader.read(arn, shard, None, 1000)
                 if r["dynamodb"]["SequenceNumber"] not in self.seen]
        self.seen |= {r["dynamodb"]["SequenceNumber"] for r in fresh}
        response = self.read_path.handler("projector")({"Records": fresh},
                                                       LocalLambdaContext("projector"))
        return len(response["batchItemFailures"])


def test_a_record_whose_projection_fails_for_good_holds_the_watermark_back(
        read_path: ReadPath) -> None:
    _bound(read_path, 4)
    feeder = _Feeder(read_path)
    poison = read_path.admit("Quetzal billing export is poisoned.")  # events 1, 2
    fault = _FailPostingsOf(poison)
    client = bootstrap.dynamodb_client()
    for operation in ("BatchWriteItem", "TransactWriteItems"):
        client.meta.events.register(f"before-parameter-build.dynamodb.{operation}", fault)
    try:
        assert feeder.feed() > 0  # the poison record's stream records fail (and are parked)
        later = read_path.admit("Quetzal billing export runs daily.")  # events 3, 4
        assert feeder.feed() > 0  # the later events cannot pass the poison record either
        assert _watermark(read_path) == 1
        # Both are found: the poison record through the tail, every time.
        assert set(ids(read_path.search("quetzal billing"))) == {poison, later}
        read_path.admit("Quetzal billing has a third record.")  # head 6, watermark 1: 5 > 4
        assert error_code(read_path.search("quetzal billing")) == "PROJECTION_STALE"
    finally:
        for operation in ("BatchWriteItem", "TransactWriteItems"):
            client.meta.events.unregister(f"before-parameter-build.dynamodb.{operation}", fault)
    read_path.project()  # the fault is fixed: the stream replayed from the DLQ heals it
    assert _watermark(read_path) == 6
    assert len(ids(read_path.search("quetzal billing"))) == 3


@pytest.mark.parametrize("projected", [False, True], ids=["projector-stopped", "drained"])
def test_receipts_for_forgotten_expired_or_future_content_equal_an_unknown_words(
        read_path: ReadPath, projected: bool) -> None:
    now = read_path.clock.now
    forgotten = read_path.admit("Raccoon rotation key lives in the vault.")
    read_path.admit("Reindeer export expires soon.", retention={
        "derivative_rule": "make-ineligible", "expires_at": format_instant(now + DAY_MS)})
    read_path.admit("Rhea migration starts next month.",
                    valid_time={"t": now + 20 * DAY_MS})
    read_path.project()
    read_path.forget(forgotten)
    if projected:
        read_path.project()
    read_path.clock.now = now + DAY_MS  # the reindeer record has expired, rhea is future
    unknown = _value(read_path.search("zyzzyva"))
    for word in ("raccoon rotation", "reindeer export", "rhea migration"):
        value = _value(read_path.search(word))
        assert value["records"] == []
        assert "next_page_cursor" not in value
        assert value["rank_receipt"]["candidate_count"] == 0
        # Only the digests over the query itself may differ.
        strip = {"request_digest", "receipt_digest"}
        assert {k: v for k, v in value["rank_receipt"].items() if k not in strip} == {
            k: v for k, v in unknown["rank_receipt"].items() if k not in strip}


def test_a_projection_saved_before_watermarks_catches_up_when_the_local_pump_starts(
        read_path: ReadPath) -> None:
    _bound(read_path, 3)
    records = {read_path.admit(f"Tamarin report number {n}.") for n in range(3)}
    read_path.project()
    s = read_path.aws.settings
    read_path.aws.dynamodb.update_item(  # as an older version left it: no watermark
        TableName=s.projection_table_name, UpdateExpression="REMOVE wm",
        Key={"pk": {"S": f"STATS#{space(Scope(s.tenant_id, 'ws-main'))}"},
             "sk": {"S": "STATS"}})
    assert error_code(read_path.search("tamarin report")) == "PROJECTION_STALE"
    catch_up_watermarks(s)
    assert _watermark(read_path) == 6
    assert set(ids(read_path.search("tamarin report"))) == records
