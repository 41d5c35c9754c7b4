"""The sparse ``waiting`` index of the main table: what waits for a human, per workspace.

An item carries ``waiting_pk`` / ``waiting_sk`` only while it waits, so the index holds
nothing else (a sparse GSI: docs/confirmation.md, "Listing what waits"):

- a confirmation from ``RecordRequest`` until the workflow marks it approved, rejected or
  expired (the ASL sets and removes the two attributes);
- a candidate from the admission that held it (``pending_adjudication``) until any later
  decision moves it out of ``pending`` (``items.move_candidate``).

Both live under the workspace's confirmation partition value (``CONF#{t}#{w}``, the one
partition family the host API may touch) and are told apart by the sort key's first
letter; sort keys start with a zero-padded instant, so a page is oldest deadline first.
The index projects the listed attributes only: never a task token, never ciphertext.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any, Final

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate_read
from engram_memory.adapters.dynamodb import items as it
from engram_memory.adapters.dynamodb.items import (
    ADJUDICATION_KIND,
    CONFIRMATION_KIND,
    WAITING_PK,
    WAITING_SK,
    waiting_pk,
)
from engram_memory.domain.errors import InvalidSchema
from engram_memory.services.waiting import (
    CURSOR_RE,
    WaitingCandidate,
    WaitingConfirmation,
    WaitingPage,
)

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

INDEX_NAME: Final = "waiting"
PROJECTED_ATTRIBUTES: Final = (
    "elicitation_ref", "state", "tool", "target", "reason", "principal", "requested_by",
    "created_at_ms", "expires_at_ms", "candidate_id", "captured_at_ms", "decided_at_ms",
    "policy_id", "policy_version", "payload_digest",
)
"""Non-key attributes the index projects (the CDK stack declares the index with them)."""

_SORT_KEY_RE = re.compile(r"^[CA]#[0-9]{15}#[A-Za-z0-9_-]{1,128}$")


def encode_cursor(sort_key: str) -> str:
    """The opaque page cursor: base64url (unpadded) of the last sort key returned."""
    return base64.urlsafe_b64encode(sort_key.encode("ascii")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, kind: str) -> str:
    """The sort key a cursor names; InvalidSchema unless it is one this kind would emit."""
    if CURSOR_RE.fullmatch(cursor) is None:
        raise InvalidSchema()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raise InvalidSchema() from None
    if _SORT_KEY_RE.fullmatch(raw) is None or not raw.startswith(kind):
        raise InvalidSchema()
    return raw


def _table_key(scope: Scope, sort_key: str) -> dict[str, str]:
    # The index's LastEvaluatedKey also names the table key; both derive from the sort key.
    item_id = sort_key.rsplit("#", 1)[1]
    if sort_key.startswith(CONFIRMATION_KIND):
        return {"pk": f"CONF#{scope.key}", "sk": f"REF#{item_id}"}
    return {"pk": it.scope_pk(scope), "sk": it.candidate_sk(item_id)}


def _confirmation(item: dict[str, Any]) -> WaitingConfirmation:
    return WaitingConfirmation(
        elicitation_ref=it.text(item, "elicitation_ref"), state=it.text(item, "state"),
        tool=it.text(item, "tool"), target=it.text(item, "target"),
        reason=it.optional_text(item, "reason") or "", principal=it.text(item, "principal"),
        requested_by=it.optional_text(item, "requested_by") or "",
        created_at_ms=it.number(item, "created_at_ms"),
        expires_at_ms=it.number(item, "expires_at_ms"),
    )


def _candidate(item: dict[str, Any]) -> WaitingCandidate:
    return WaitingCandidate(
        candidate_id=it.text(item, "candidate_id"), principal=it.text(item, "principal"),
        captured_at_ms=it.number(item, "captured_at_ms"),
        held_at_ms=it.number(item, "decided_at_ms"),
        policy_id=it.text(item, "policy_id"), policy_version=it.text(item, "policy_version"),
        payload_digest=it.text(item, "payload_digest"),
    )


class DynamoWaitingList:
    """The WaitingList port: one Query of the sparse index per page."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def confirmations(self, scope: Scope, limit: int,
                      cursor: str | None) -> WaitingPage[WaitingConfirmation]:
        """Pending confirmations of ``scope``, soonest expiry first."""
        found, after = self._page(scope, CONFIRMATION_KIND, limit, cursor)
        return WaitingPage([_confirmation(item) for item in found], after)

    def adjudications(self, scope: Scope, limit: int,
                      cursor: str | None) -> WaitingPage[WaitingCandidate]:
        """Candidates held for adjudication in ``scope``, oldest hold first."""
        found, after = self._page(scope, ADJUDICATION_KIND, limit, cursor)
        return WaitingPage([_candidate(item) for item in found], after)

    def _page(self, scope: Scope, kind: str, limit: int,
              cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        partition = waiting_pk(scope)
        request: dict[str, Any] = {
            "TableName": self._table, "IndexName": INDEX_NAME, "Limit": limit,
            "KeyConditionExpression": "#p = :p AND begins_with(#s, :kind)",
            "ExpressionAttributeNames": {"#p": WAITING_PK, "#s": WAITING_SK},
            "ExpressionAttributeValues": {":p": it.s(partition), ":kind": it.s(kind)},
        }
        if cursor is not None:
            sort_key = decode_cursor(cursor, kind)
            start = {**_table_key(scope, sort_key), WAITING_PK: partition,
                     WAITING_SK: sort_key}
            request["ExclusiveStartKey"] = {name: it.s(value) for name, value in start.items()}
        try:
            response = self._client.query(**request)
        except AWS_FAILURES as exc:
            raise translate_read(exc) from exc
        found: list[dict[str, Any]] = response.get("Items", [])
        last = response.get("LastEvaluatedKey")
        after = encode_cursor(last[WAITING_SK]["S"]) if last and found else None
        return found, after
