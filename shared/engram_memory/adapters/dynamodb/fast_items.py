"""Items of a DynamoDB read parsed without botocore's walk of every attribute value's shape.

botocore parses each attribute value of a response by walking the ``AttributeValue``
structure (≈ 9 µs an item of one binary attribute, measured: docs/performance.md); a search
at 50,000 records reads ~600 posting blocks and ~130 term lists, ≈ 11 ms of its CPU. On the
``before-parse`` event of a successful ``Query``, ``Scan``, ``GetItem`` or ``BatchGetItem``
this takes the items out of the JSON body, converts their values exactly as botocore's JSON
parser does (``B`` and ``BS`` base64-decoded to bytes; ``S``, ``N``, ``SS``, ``NS``,
``BOOL`` and ``NULL`` as JSON gives them; ``M`` and ``L`` recursively), and hands them to
botocore as the response's customized part, which botocore merges into what it parses of
the rest (counts, keys, capacity, unprocessed keys). Tested equal to botocore's own parse.
"""

from __future__ import annotations

import base64
import json
from typing import Any

__all__ = ["attribute_value", "register"]

_ITEM_LISTS = ("Query", "Scan")


def attribute_value(value: dict[str, Any]) -> dict[str, Any]:
    """One attribute value as botocore parses it."""
    if "S" in value or "N" in value:
        return value
    if "B" in value:
        return {"B": base64.b64decode(value["B"])}
    if "M" in value:
        return {"M": {name: attribute_value(inner) for name, inner in value["M"].items()}}
    if "L" in value:
        return {"L": [attribute_value(inner) for inner in value["L"]]}
    if "BS" in value:
        return {"BS": [base64.b64decode(inner) for inner in value["BS"]]}
    return value  # SS, NS, BOOL, NULL: JSON's strings and booleans


def _item(item: dict[str, Any]) -> dict[str, Any]:
    return {name: attribute_value(value) for name, value in item.items()}


def _take_items(operation: str, body: dict[str, Any]) -> dict[str, Any]:
    """The item part of a response body, removed from it and parsed."""
    if operation in _ITEM_LISTS and isinstance(body.get("Items"), list):
        return {"Items": [_item(item) for item in body.pop("Items")]}
    if operation == "GetItem" and isinstance(body.get("Item"), dict):
        return {"Item": _item(body.pop("Item"))}
    if operation == "BatchGetItem" and isinstance(body.get("Responses"), dict):
        return {"Responses": {table: [_item(item) for item in items]
                              for table, items in body.pop("Responses").items()}}
    return {}


def _before_parse(operation_model: Any, response_dict: dict[str, Any],
                  customized_response_dict: dict[str, Any], **_: Any) -> None:
    if response_dict.get("status_code") != 200 or not response_dict.get("body"):
        return  # errors (and anything unusual) go to botocore untouched
    try:
        body = json.loads(response_dict["body"])
    except ValueError:
        return
    if not isinstance(body, dict):
        return
    taken = _take_items(operation_model.name, body)
    if taken:
        customized_response_dict.update(taken)
        response_dict["body"] = json.dumps(body).encode("utf-8")


def register(client: Any) -> None:
    """Parse the items of this DynamoDB client's reads here (see the module's docstring)."""
    for operation in (*_ITEM_LISTS, "GetItem", "BatchGetItem"):
        client.meta.events.register(f"before-parse.dynamodb.{operation}", _before_parse,
                                    unique_id=f"engram-fast-items-{operation}")
