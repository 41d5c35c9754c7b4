"""bench/moto_item_tracker.py frees moto's per-request item copies, never changes answers.

backup_scale's peak memory rests on it: clearing moto's dashboard lists between requests
must leave every Query, write and read answering as before, and must release the copies a
Query made.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import Item

from bench import moto_item_tracker
from tests.support.tables import create_keyed_table

TABLE = "tracker-test"
PK = {"S": "T#tenant#W#ws"}
QUERY = {"TableName": TABLE, "ConsistentRead": True, "Limit": 40,
         "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
         "ExpressionAttributeValues": {":pk": PK, ":prefix": {"S": "REC#"}},
         "FilterExpression": "attribute_exists(body)"}


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_keyed_table(dynamodb, TABLE)
        for start in range(0, 150, 25):
            dynamodb.batch_write_item(RequestItems={TABLE: [
                {"PutRequest": {"Item": {
                    "pk": PK, "sk": {"S": f"{'REC' if n % 5 else 'TOMB'}#{n:04d}"},
                    **({"body": {"S": f"record {n}"}} if n % 7 else {})}}}
                for n in range(start, start + 25)]})
        yield dynamodb


def _pages(client: Any, between_pages: Any) -> list[tuple[list[dict[str, Any]], Any]]:
    pages: list[tuple[list[dict[str, Any]], Any]] = []
    start: dict[str, Any] | None = None
    while True:
        answer = client.query(**QUERY, **({"ExclusiveStartKey": start} if start else {}))
        start = answer.get("LastEvaluatedKey")
        pages.append((answer["Items"], start))
        between_pages()
        if start is None:
            return pages


def test_clearing_between_pages_changes_no_page(client: Any) -> None:
    kept = _pages(client, lambda: None)
    assert moto_item_tracker.tracked() > 150  # the stored items and every page's copies
    cleared = _pages(client, moto_item_tracker.clear)
    assert moto_item_tracker.tracked() == 0
    assert cleared == kept
    assert sum(len(items) for items, _ in cleared) == 103  # 120 REC#, 17 of them bodiless
    assert len(cleared) > 2


def test_writes_and_reads_after_a_clear_answer_as_before(client: Any) -> None:
    moto_item_tracker.clear()
    key = {"pk": PK, "sk": {"S": "REC#0001"}}
    client.update_item(TableName=TABLE, Key=key, UpdateExpression="SET body = :b",
                       ExpressionAttributeValues={":b": {"S": "changed"}})
    client.put_item(TableName=TABLE, Item={"pk": PK, "sk": {"S": "REC#9999"},
                                           "body": {"S": "new"}})
    moto_item_tracker.clear()
    assert client.get_item(TableName=TABLE, Key=key)["Item"]["body"] == {"S": "changed"}
    items = [item for items, _ in _pages(client, moto_item_tracker.clear) for item in items]
    assert items[0]["body"] == {"S": "changed"}
    assert items[-1]["body"] == {"S": "new"}
    assert len(items) == 104


def test_a_clear_releases_the_copies_a_query_made(client: Any) -> None:
    moto_item_tracker.clear()
    client.query(**QUERY)
    copies = [weakref.ref(item) for item in Item.instances_tracked]  # type: ignore[attr-defined]
    assert len(copies) >= 40  # moto copies every item it read for the page
    assert moto_item_tracker.clear() == len(copies)
    gc.collect()
    assert [ref for ref in copies if ref() is not None] == []
