"""Items parsed beside botocore are exactly what botocore's own parser gives."""

from __future__ import annotations

import base64
import json
from typing import Any

import boto3
import botocore.session
from botocore.parsers import create_parser
from engram_memory.adapters.dynamodb import fast_items
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

_MODEL = botocore.session.get_session().get_service_model("dynamodb")

blobs = st.binary(max_size=40).map(lambda raw: base64.b64encode(raw).decode("ascii"))
numbers = st.integers(-10**12, 10**12).map(str)
scalars = st.one_of(
    st.builds(lambda v: {"S": v}, st.text(max_size=12)),
    st.builds(lambda v: {"N": v}, numbers),
    st.builds(lambda v: {"B": v}, blobs),
    st.builds(lambda v: {"SS": v}, st.lists(st.text(max_size=5), min_size=1, max_size=3)),
    st.builds(lambda v: {"NS": v}, st.lists(numbers, min_size=1, max_size=3)),
    st.builds(lambda v: {"BS": v}, st.lists(blobs, min_size=1, max_size=3)),
    st.builds(lambda v: {"BOOL": v}, st.booleans()),
    st.just({"NULL": True}),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.builds(lambda v: {"M": v}, st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    st.builds(lambda v: {"L": v}, st.lists(inner, max_size=3))), max_leaves=12)
items = st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=5)
keys = st.fixed_dictionaries({"pk": st.builds(lambda v: {"S": v}, st.text(max_size=8)),
                              "sk": st.builds(lambda v: {"B": v}, blobs)})


def _parsed(operation: str, body: dict[str, Any], status: int = 200) -> tuple[Any, Any]:
    """botocore's parse of ``body``, and the parse with the items taken out first."""
    shape = _MODEL.operation_model(operation).output_shape
    raw = json.dumps(body).encode()
    plain = create_parser("json").parse({"status_code": status, "headers": {}, "body": raw},
                                        shape)
    response = {"status_code": status, "headers": {}, "body": raw}
    customized: dict[str, Any] = {}
    fast_items._before_parse(_MODEL.operation_model(operation), response, customized)
    fast = create_parser("json").parse(response, shape)
    fast.update(customized)
    return plain, fast


@settings(deadline=None)
@given(st.lists(items, max_size=4), st.none() | keys, st.sampled_from(["Query", "Scan"]))
def test_query_and_scan_items_parse_as_botocore_parses_them(
        found: list[dict[str, Any]], last: dict[str, Any] | None, operation: str) -> None:
    body: dict[str, Any] = {"Items": found, "Count": len(found), "ScannedCount": len(found),
                            "ConsumedCapacity": {"TableName": "t", "CapacityUnits": 0.5}}
    if last is not None:
        body["LastEvaluatedKey"] = last
    plain, fast = _parsed(operation, body)
    assert fast == plain


@settings(deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b"]), st.lists(items, max_size=3), max_size=2),
       st.lists(keys, max_size=2))
def test_batch_get_responses_parse_as_botocore_parses_them(
        responses: dict[str, list[dict[str, Any]]], unprocessed: list[dict[str, Any]]) -> None:
    body: dict[str, Any] = {"Responses": responses}
    if unprocessed:
        body["UnprocessedKeys"] = {"a": {"Keys": unprocessed, "ConsistentRead": True}}
    plain, fast = _parsed("BatchGetItem", body)
    assert fast == plain


@given(st.none() | items)
def test_get_item_parses_as_botocore_parses_it(item: dict[str, Any] | None) -> None:
    plain, fast = _parsed("GetItem", {} if item is None else {"Item": item})
    assert fast == plain


def test_an_error_response_is_left_to_botocore() -> None:
    body = {"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
            "message": "Requested resource not found", "Items": []}
    response = {"status_code": 400, "headers": {}, "body": json.dumps(body).encode()}
    customized: dict[str, Any] = {}
    fast_items._before_parse(_MODEL.operation_model("Query"), response, customized)
    assert customized == {}
    assert json.loads(response["body"]) == body


def test_a_registered_client_reads_what_an_unregistered_one_does(
        monkeypatch: Any) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "t")
    with mock_aws():
        plain = boto3.client("dynamodb", region_name="us-east-1")
        fast = boto3.client("dynamodb", region_name="us-east-1")
        fast_items.register(fast)
        taken: list[str] = []  # the hook fired: the items came from it, not from botocore
        fast.meta.events.register("after-call.dynamodb", lambda **_: None)
        real = fast_items._take_items
        monkeypatch.setattr(fast_items, "_take_items",
                            lambda operation, body: taken.append(operation) or real(operation,
                                                                                   body))
        plain.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                           KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                      {"AttributeName": "sk", "KeyType": "RANGE"}],
                           AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                                 {"AttributeName": "sk", "AttributeType": "S"}])
        for n in range(5):
            plain.put_item(TableName="t", Item={
                "pk": {"S": "p"}, "sk": {"S": f"{n}"}, "b": {"B": bytes([n]) * 3},
                "m": {"M": {"l": {"L": [{"N": str(n)}, {"BS": [b"x", b"y"]}]}}}})
        query = {"TableName": "t", "KeyConditionExpression": "pk = :p",
                 "ExpressionAttributeValues": {":p": {"S": "p"}}, "Limit": 3}
        first = fast.query(**query)
        assert first["Items"] == plain.query(**query)["Items"]
        assert first["Items"][0]["b"] == {"B": b"\x00\x00\x00"}
        assert first["LastEvaluatedKey"] == {"pk": {"S": "p"}, "sk": {"S": "2"}}
        keys = {"t": {"Keys": [{"pk": {"S": "p"}, "sk": {"S": "4"}}]}}
        assert fast.batch_get_item(RequestItems=keys)["Responses"] == plain.batch_get_item(
            RequestItems=keys)["Responses"]
        key = {"pk": {"S": "p"}, "sk": {"S": "1"}}
        assert fast.get_item(TableName="t", Key=key)["Item"] == plain.get_item(
            TableName="t", Key=key)["Item"]
        assert "Item" not in fast.get_item(TableName="t", Key={"pk": {"S": "p"},
                                                               "sk": {"S": "9"}})
        assert taken == ["Query", "BatchGetItem", "GetItem", "GetItem"]
