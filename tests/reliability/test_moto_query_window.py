"""bench/moto_query_window.py changes how fast moto pages a partition, never what it answers.

backup_scale's export numbers rest on it: every paged Query a bench makes must return the
same items, pages and end as moto's own Query.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from bench import moto_query_window
from tests.support.tables import create_keyed_table

TABLE = "window-test"
PK = {"S": "T#tenant#W#ws"}


def _sort_keys() -> list[str]:
    rng = random.Random(31)
    ids = [f"mem_{rng.getrandbits(64):016x}" for _ in range(503)]
    keys = [f"REC#{i}" for i in ids]
    keys += [f"REC#{i}#PART#{n}" for i in ids[:20] for n in range(2)]  # not records
    keys += [f"TOMB#sha256:{rng.getrandbits(64):016x}" for _ in range(9)]
    keys += ["CAND#a", "CAND#b", "HEAD", "REC", "REC#", "RECZ"]
    rng.shuffle(keys)
    return keys


@pytest.fixture
def client() -> Iterator[Any]:
    moto_query_window.install()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_keyed_table(dynamodb, TABLE)
        keys = _sort_keys()
        for start in range(0, len(keys), 25):
            dynamodb.batch_write_item(RequestItems={TABLE: [
                {"PutRequest": {"Item": {
                    "pk": PK, "sk": {"S": key},
                    **({"record_id": {"S": key[4:]}} if key.count("#") == 1 else {})}}}
                for key in keys[start:start + 25]]})
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "other"}, "sk": {"S": "REC#x"}})
        yield dynamodb
    moto_query_window.set_enabled(True)


def _pages(client: Any, limit: int, **query: Any) -> list[tuple[list[str], Any]]:
    pages: list[tuple[list[str], Any]] = []
    start: dict[str, Any] | None = None
    while True:
        kwargs: dict[str, Any] = {"TableName": TABLE, "ConsistentRead": True, "Limit": limit,
                                  **query}
        if start is not None:
            kwargs["ExclusiveStartKey"] = start
        answer = client.query(**kwargs)
        start = answer.get("LastEvaluatedKey")
        pages.append(([item["sk"]["S"] for item in answer["Items"]], start))
        if start is None:
            return pages


QUERIES = {
    "records, filtered": {
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": {":pk": PK, ":prefix": {"S": "REC#"}},
        "FilterExpression": "attribute_exists(record_id)"},
    "tombstones": {
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": {":pk": PK, ":prefix": {"S": "TOMB#"}}},
    "whole partition, keys only": {
        "KeyConditionExpression": "pk = :pk", "ProjectionExpression": "pk, sk",
        "ExpressionAttributeValues": {":pk": PK}},
}


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("limit", [9, 250])
def test_paged_queries_read_the_same_items_with_and_without_the_window(
        client: Any, name: str, limit: int) -> None:
    moto_query_window.set_enabled(False)
    shipped = _pages(client, limit, **QUERIES[name])
    moto_query_window.set_enabled(True)
    windowed = _pages(client, limit, **QUERIES[name])
    items = [sk for page, _ in windowed for sk in page]
    assert items == [sk for page, _ in shipped for sk in page]
    assert items == sorted(items)
    assert len(items) == len(set(items)) > 0
    # Same pages; only the end may differ (moto as shipped can add one empty last page).
    assert [page for page, _ in windowed if page] == [page for page, _ in shipped if page]
