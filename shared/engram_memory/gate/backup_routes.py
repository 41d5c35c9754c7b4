"""The host routes of backup and restore (docs/backup.md), dispatched from gate/host_api.py.

``GET    /host/export?workspace_id=W&part=records|tombstones|journal``
                            ``[&at=N][&since=N][&limit=N][&page=T]``
``POST   /host/restore``            ``{workspace_id, bundle_digest, forgotten_record_ids}``
``POST   /host/restore/lines``      ``{workspace_id, bundle_digest, offset, lines}``
``POST   /host/restore/commit``     ``{workspace_id, bundle_digest}``
``DELETE /host/restore?workspace_id=W``  (roll a staged restore back)

Export pins the journal cursor on a part's first page (``at``, default the head now) and
carries it in the page token, which the route validates (this workspace, this part, a
cursor not past the head, a sort key of the part's own kind). The server verifies every
uploaded line with the same :class:`~engram_memory.backup.bundle.Verifier` the CLI uses.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from engram_memory.adapters.dynamodb.export_reader import DynamoExportReader, ExportPage
from engram_memory.adapters.dynamodb.restore_writer import (
    RESTORED_CURSOR,
    DynamoRestoreWriter,
    RestoreProgress,
)
from engram_memory.backup.bundle import BundleProblem, Verifier, VerifierState
from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import InvalidSchema, RestoreRefused
from engram_memory.domain.journal import Actor, JournalHead, build_event

PARTS = ("records", "tombstones", "journal")
DEFAULT_LIMIT = 200
MAX_LIMIT = 1000
_SK = {"records": re.compile(r"^REC#mem_[a-z2-7]+$"),
       "tombstones": re.compile(r"^TOMB#sha256:[0-9a-f]{64}$"),
       "journal": re.compile(r"^EV#[0-9]{20}$")}
_EXPORT_PARAMETERS = frozenset({"workspace_id", "part", "at", "since", "limit", "page"})
RESTORE_OPERATION = "restore"

Digest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
WorkspaceId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,128}$")]
RecordId = Annotated[str, StringConstraints(pattern=r"^mem_[a-z2-7]{1,64}$")]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RestoreBegin(_Closed):
    """Start (or resume) a restore of one verified bundle into an empty workspace."""

    workspace_id: WorkspaceId
    bundle_digest: Digest
    forgotten_record_ids: Annotated[list[RecordId], Field(max_length=100_000)] = []


class RestoreLines(_Closed):
    """The next bundle lines, from line ``offset`` on (each with its newline)."""

    workspace_id: WorkspaceId
    bundle_digest: Digest
    offset: Annotated[int, Field(ge=0)]
    lines: Annotated[list[str], Field(min_length=1, max_length=10_000)]


class RestoreCommit(_Closed):
    """Finish a restore whose every line was accepted."""

    workspace_id: WorkspaceId
    bundle_digest: Digest


def _number(query: Mapping[str, str], name: str, default: int) -> int:
    value = query.get(name)
    if value is None:
        return default
    if not (value.isascii() and value.isdigit() and len(value) <= 15):
        raise InvalidSchema
    return int(value)


def encode_page(token: Mapping[str, Any]) -> str:
    """The opaque page token of an export part."""
    return base64.urlsafe_b64encode(canonical_json(dict(token))).decode("ascii").rstrip("=")


def decode_page(text: str) -> dict[str, Any]:
    """Inverse of :func:`encode_page`; INVALID_SCHEMA for anything it did not make."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        token = json.loads(raw)
    except (ValueError, binascii.Error):
        raise InvalidSchema from None
    if not isinstance(token, dict) or set(token) != {"v", "w", "p", "at", "since", "sk"}:
        raise InvalidSchema
    if canonical_json(token) != raw:
        raise InvalidSchema
    return token


class BackupRoutes:
    """Export pages and the staged restore of a bundle."""

    def __init__(self, reader: DynamoExportReader, writer: DynamoRestoreWriter,
                 tenant_id: str, now_ms: Callable[[], int]) -> None:
        self._reader = reader
        self._writer = writer
        self._tenant = tenant_id
        self._now_ms = now_ms

    # --- export -------------------------------------------------------------------------

    def export(self, scope: Scope, query: Mapping[str, str]) -> dict[str, Any]:
        """One page of one part of the workspace as of a pinned cursor."""
        if not set(query) <= _EXPORT_PARAMETERS or query.get("part") not in PARTS:
            raise InvalidSchema
        part = str(query["part"])
        limit = _number(query, "limit", DEFAULT_LIMIT)
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidSchema
        head = self._reader.head(scope)
        if "page" in query:
            if "at" in query or "since" in query:
                raise InvalidSchema
            token = decode_page(query["page"])
            if (token["v"] != 1 or token["w"] != scope.workspace_id or token["p"] != part
                    or not isinstance(token["at"], int) or not isinstance(token["since"], int)
                    or not isinstance(token["sk"], str) or not _SK[part].fullmatch(token["sk"])):
                raise InvalidSchema
            at, since, after = token["at"], token["since"], token["sk"]
        else:
            at, since, after = _number(query, "at", head.cursor), _number(query, "since", 0), None
        if at > head.cursor or since > at:
            raise InvalidSchema
        page = self._page(scope, part, at, since, limit, after)
        body: dict[str, Any] = {"tenant_id": scope.tenant_id, "workspace_id": scope.workspace_id,
                                "part": part, "at": at, "items": page.entries}
        if page.last_sk is not None:
            body["next"] = encode_page({"v": 1, "w": scope.workspace_id, "p": part, "at": at,
                                        "since": since, "sk": page.last_sk})
        return body

    def _page(self, scope: Scope, part: str, at: int, since: int, limit: int,
              after: str | None) -> ExportPage:
        if part == "records":
            return self._reader.records(scope, at, limit, after)
        if part == "tombstones":
            return self._reader.tombstones(scope, at, since, limit, after)
        return self._reader.journal(scope, at, limit, after)

    # --- restore ------------------------------------------------------------------------

    def begin(self, scope: Scope, body: RestoreBegin) -> dict[str, Any]:
        """Fence an empty workspace for this bundle, or resume the same bundle's restore."""
        progress = self._writer.progress(scope)
        if progress is not None:
            if progress.bundle_digest != body.bundle_digest:
                raise RestoreRefused  # another bundle's restore is staged here
            return _status(progress)
        if not self._reader.is_empty(scope):
            raise RestoreRefused
        self._writer.begin(scope, body.bundle_digest, VerifierState().to_json(),
                           body.forgotten_record_ids)
        started = self._writer.progress(scope)
        assert started is not None
        return _status(started)

    def _staged(self, scope: Scope, bundle_digest: str) -> RestoreProgress:
        progress = self._writer.progress(scope)
        if progress is None or progress.bundle_digest != bundle_digest:
            raise RestoreRefused
        return progress

    def lines(self, scope: Scope, body: RestoreLines) -> dict[str, Any]:
        """Verify and stage the next lines; on a bundle that does not verify, roll back."""
        progress = self._staged(scope, body.bundle_digest)
        if body.offset != progress.offset:
            return {**_status(progress), "accepted": False}
        verifier = Verifier(VerifierState.from_json(progress.verifier))
        records: list[dict[str, Any]] = []
        guards: list[dict[str, Any]] = []
        try:
            for text in body.lines:
                obj = verifier.feed(text.encode("utf-8"))
                if obj["kind"] == "record":
                    records.append(obj)
                elif obj["kind"] == "tombstone":
                    guards.append(obj)
        except BundleProblem:
            self._writer.roll_back(scope)
            raise
        if verifier.state.tenant_id == self._tenant and records:
            source = Scope(verifier.state.tenant_id, verifier.state.workspace_id)
            if source != scope:
                forgotten = progress.forgotten | self._writer.source_forgotten(
                    source, [str(r["record_id"]) for r in records])
            else:
                forgotten = progress.forgotten
        else:
            forgotten = progress.forgotten
        kept = [r for r in records if r["record_id"] not in forgotten]
        skipped = [r for r in records if r["record_id"] in forgotten]
        # A record forgotten since the bundle keeps its guard here too: its content can
        # never be re-admitted into the restored workspace.
        guards.extend({"payload_digest": r["payload_digest"], "record_id": r["record_id"]}
                      for r in skipped)
        self._writer.stage(scope, kept, guards)
        offset = progress.offset + len(body.lines)
        self._writer.advance(scope, progress, offset, verifier.state.to_json(),
                             [str(r["record_id"]) for r in skipped],
                             progress.restored + len(kept))
        return {**_status(self._staged(scope, body.bundle_digest)), "accepted": True}

    def commit(self, scope: Scope, body: RestoreCommit, approver: str) -> dict[str, Any]:
        """The restore event at cursor 1: every staged record becomes visible at once."""
        progress = self._staged(scope, body.bundle_digest)
        verifier = Verifier(VerifierState.from_json(progress.verifier))
        try:
            summary = verifier.finish()
        except BundleProblem:
            self._writer.roll_back(scope)
            raise
        if summary.bundle_digest != body.bundle_digest:
            self._writer.roll_back(scope)
            raise BundleProblem("the bundle digest does not match the uploaded manifest")
        event = build_event(
            JournalHead(), scope=scope, operation=RESTORE_OPERATION,
            subject={"source_tenant_id": summary.tenant_id,
                     "source_workspace_id": summary.workspace_id},
            from_state=None, to_state="restored",
            actor=Actor(principal=approver, agent_id="host", session_id="restore"),
            at_ms=self._now_ms(),
            digests={"bundle_digest": summary.bundle_digest,
                     "source_journal_head": summary.journal_head.event_digest})
        assert event.cursor == RESTORED_CURSOR
        self._writer.commit(scope, summary.bundle_digest, event)
        return {"state": "restored", "bundle_digest": summary.bundle_digest,
                "restored": progress.restored, "skipped_record_ids": sorted(progress.skipped),
                "tombstones": summary.counts["tombstones"], "event_id": event.event_id,
                "source_cursor": summary.cursor}

    def abort(self, scope: Scope) -> dict[str, Any]:
        """Roll a staged (never a committed) restore back."""
        if self._writer.progress(scope) is None:
            raise RestoreRefused
        self._writer.roll_back(scope)
        return {"state": "rolled_back"}


def _status(progress: RestoreProgress) -> dict[str, Any]:
    return {"state": "staging", "bundle_digest": progress.bundle_digest,
            "offset": progress.offset, "restored": progress.restored,
            "skipped": len(progress.skipped)}


def parse_body(model: type[BaseModel], raw: bytes) -> Any:
    """A closed restore body; INVALID_SCHEMA otherwise."""
    try:
        return model.model_validate_json(raw or b"null")
    except ValidationError:
        raise InvalidSchema from None

