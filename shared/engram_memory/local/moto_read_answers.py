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
own two passes. The same JSON as moto's: tests/reliability/test_moto_dynamodb_shims.py.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from moto import settings
from moto.core.responses import ActionResult
from moto.core.serialize import JSONSerializer
from moto.dynamodb.models.dynamo_type import DynamoType

READ_ACTIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
_CAPACITY_KEYS = frozenset({"CapacityUnits", "ReadCapacityUnits", "WriteCapacityUnits"})
_SCALARS = (str, int, float)


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
