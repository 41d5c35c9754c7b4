"""moto's DynamoDB read answers written in one pass, straight from its stored items.

moto 5.2 answers a DynamoDB action in two passes: ``DynamoResult`` copies every item into
plain values, then its generic serializer walks the operation's output shape, member by
member, to write the JSON. Under back-to-back long searches on the local service (10,000
records, sampled with py-spy) the two passes were ~40 % of the process's GIL time, all of
it inside the one-request-at-a-time DynamoDB turn that another workspace's ``get`` waits
for (request_turns).

For the reads a search makes (Query, GetItem, BatchGetItem, Scan) ``WireResult`` writes the
answer once: an attribute as the ``{type: value}`` of DynamoDB's wire form (a binary one
base64-encoded), capacity units as numbers with a fraction as moto's serializer writes
them, ``None`` members left out as it leaves them out. Every other action, an error, a
member outside the operation's output shape or a value this does not know takes moto's
own two passes. A ``ProjectionExpression`` of top-level names (a posting block read's
``#p``) picks the attributes, where moto re-encodes each projected item through Python
values (~30 µs an item); it keeps moto's way for nested paths, numbers, sets and
documents. The same JSON as moto's: tests/reliability/test_moto_dynamodb_shims.py.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from moto import settings
from moto.core.responses import ActionResult
from moto.core.serialize import JSONSerializer
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

READ_ACTIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
_CAPACITY_KEYS = frozenset({"CapacityUnits", "ReadCapacityUnits", "WriteCapacityUnits"})
_SCALARS = (str, int, float)
_KEPT_AS_IS = frozenset({"S", "B", "BOOL", "NULL"})
"""Attribute types moto's projection gives back unchanged (it re-encodes numbers, sets
and documents through Python values: a number normalized, a set reordered)."""


class _Unwritable(Exception):
    """A value the one-pass writer does not know: moto's own path answers."""


def _blob_text(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, str):
        return value  # moto kept the base64 text the client sent
    raise _Unwritable


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _wire(value: Any) -> Any:
    """``value`` (moto's result: its item objects, dicts, lists, scalars) in wire form."""
    if isinstance(value, DynamoType):
        kind, inner = value.type, value.value
        if kind == "B":
            return {"B": _blob_text(inner)}
        if kind == "BS":
            return {"BS": [_blob_text(v) for v in inner]}
        return {kind: _wire(inner)}
    if isinstance(value, dict):
        return {key: (float(item) if key in _CAPACITY_KEYS and _is_number(item) else _wire(item))
                for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_wire(item) for item in value]
    if value is None or isinstance(value, _SCALARS):  # bool is an int
        return value
    if isinstance(value, bytes):
        return _blob_text(value)
    raise _Unwritable


def _one_pass(context: Any, raw: Any) -> tuple[int, dict[str, str], str] | None:
    """The answer of a read written from ``raw``, or None for moto's own path."""
    operation = context.operation_model
    shape = operation.output_shape
    if (operation.name not in READ_ACTIONS or context.serializer_class is not JSONSerializer
            or settings.PRETTIFY_RESPONSES or not isinstance(raw, dict) or shape is None
            or not set(raw) <= set(shape.members)):
        return None
    try:
        body = json.dumps(_wire(raw))
    except (_Unwritable, TypeError, ValueError):
        return None
    version = operation.service_model.metadata.get("jsonVersion", "1.0")
    headers = {"Content-Type": f"application/x-amz-json-{version}"}
    return operation.http.get("responseCode", 200), headers, body


def _projected(item: Any, paths: list[list[str]]) -> Any | None:
    """``item`` with only the top-level attributes ``paths`` name, or None for moto's own
    projection (a nested path, or an attribute it would re-encode)."""
    picked: dict[str, Any] = {}
    for path in paths:
        if len(path) != 1 or "[" in path[0]:
            return None
        value = item.attrs.get(path[0])
        if value is None:
            continue
        if value.type not in _KEPT_AS_IS:
            return None
        picked[path[0]] = copy.deepcopy(value)
    projected: Any = Item.__new__(Item)
    projected.hash_key, projected.range_key = item.hash_key, item.range_key
    projected.attrs = LimitedSizeDict(picked)  # sizes were checked when the item was written
    return projected


def install() -> None:
    """Answer moto's DynamoDB reads through ``WireResult`` (process-wide, idempotent)."""
    import moto.dynamodb.responses as responses

    original = responses.DynamoResult
    if getattr(original, "one_pass", False):
        return

    class WireResult(ActionResult):
        """A DynamoDB result kept as moto's objects until it is written."""

        one_pass = True

        def execute_result(self, context: Any) -> Any:
            answer = _one_pass(context, self.result)
            return answer if answer is not None else original(self.result).execute_result(context)

    responses.DynamoResult = WireResult  # type: ignore[misc,assignment]
    moto_projection = Item.project

    def project(self: Any, projection_expressions: list[list[str]]) -> Any:
        projected = _projected(self, projection_expressions)
        return moto_projection(self, projection_expressions) if projected is None else projected

    Item.project = project  # type: ignore[method-assign]
