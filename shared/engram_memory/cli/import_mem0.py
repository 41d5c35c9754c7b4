"""``engram-memory import --from mem0``: stream a mem0 export into a workspace.

Reads mem0's memory export (``get_all``'s JSON: a bare list, or ``{"results": [...]}``)
one memory at a time, drops what is not mapped (mem0's ``hash``, ``metadata`` and its
categories, ``run_id``, scores), finds duplicates within the file, and sends bounded batches
to ``POST /host/migrations/mem0``. Prints a JSON report: imported, already present, held,
rejected, refused (by contract code, with ids: never content), duplicates. Exit 0, or 1
when any memory hit ``MIGRATION_LEDGER_INVALID`` (or the service refused the batch).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import unicodedata
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

BATCH_SIZE = 10
"""Memories per request (the route's bound, gate/migration.MAX_BATCH)."""
READ_BYTES = 65_536
ROUTE = "/host/migrations/mem0"
LEDGER_INVALID = "MIGRATION_LEDGER_INVALID"
_WS = " \t\r\n"


class ExportInvalid(Exception):
    """The file is not a mem0 export (not JSON, or neither a list nor ``{"results": []}``)."""


class _Reader:
    """Incremental JSON values from a text stream (bounded by the largest single value)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream, self._buf, self._pos, self._eof = stream, "", 0, False
        self._decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self._eof:
            return False
        chunk = self._stream.read(READ_BYTES)
        self._buf, self._pos = self._buf[self._pos:] + chunk, 0
        self._eof = not chunk
        return bool(chunk)

    def peek(self) -> str:
        """The next non-blank character ("" at the end of the stream)."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _WS:
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                return ""

    def take(self, char: str) -> None:
        """Consume ``char`` (after blanks) or refuse the file."""
        if self.peek() != char:
            raise ExportInvalid
        self._pos += 1

    def value(self) -> Any:
        """The next complete JSON value."""
        self.peek()
        while True:
            try:
                found, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError:
                if not self._more():
                    raise ExportInvalid from None
                continue
            if end == len(self._buf) and self._more():
                continue  # a number may go on in the next chunk
            self._pos = end
            return found

    def items(self) -> Iterator[Any]:
        """The elements of the array that starts here."""
        self.take("[")
        if self.peek() == "]":
            self._pos += 1
            return
        while True:
            yield self.value()
            if self.peek() == ",":
                self._pos += 1
                continue
            self.take("]")
            return


def memories(stream: IO[str]) -> Iterator[Any]:
    """Every memory of a mem0 export, bare list or wrapped in ``{"results": [...]}``."""
    reader = _Reader(stream)
    if reader.peek() == "[":
        yield from reader.items()
        return
    reader.take("{")
    seen_results = False
    while reader.peek() != "}":
        key = reader.value()
        reader.take(":")
        if key == "results" and reader.peek() == "[":
            seen_results = True
            yield from reader.items()
        else:
            reader.value()  # e.g. "relations" (graph memory): not migrated
        if reader.peek() == ",":
            reader.take(",")
    if not seen_results:
        raise ExportInvalid


def _ms(value: object) -> int | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # mem0 writes naive times in UTC by default
    return int(parsed.timestamp() * 1000)


def to_wire(item: object) -> dict[str, Any] | None:
    """The fields the route takes, or None when the memory cannot be mapped."""
    if not isinstance(item, dict):
        return None
    mem_id, text = item.get("id"), item.get("memory")
    if not isinstance(mem_id, str) or not isinstance(text, str) or not text.strip():
        return None
    wire: dict[str, Any] = {"id": mem_id, "memory": unicodedata.normalize("NFC", text)}
    for source, target in (("created_at", "created_at_ms"), ("updated_at", "updated_at_ms")):
        at = _ms(item.get(source))
        if at is not None:
            wire[target] = at
    for owner in ("user_id", "agent_id"):
        value = item.get(owner)
        if isinstance(value, str) and value:
            wire[owner] = unicodedata.normalize("NFC", value)
    if "created_at_ms" not in wire and "updated_at_ms" not in wire:
        return None
    return wire


def _content_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Report:
    """What the import did, by id and contract code only."""

    counts: Counter[str] = field(default_factory=Counter)
    refused: dict[str, list[str]] = field(default_factory=dict)
    same_id_twice: list[str] = field(default_factory=list)
    same_content: list[list[str]] = field(default_factory=list)

    def refuse(self, mem_id: str, code: str) -> None:
        """Count one refusal under its contract code."""
        self.counts["refused"] += 1
        self.refused.setdefault(code, []).append(mem_id)

    def as_json(self) -> dict[str, Any]:
        """The printed report."""
        return {
            "imported": self.counts["imported"],
            "already_present": self.counts["already_present"],
            "held": self.counts["held"], "rejected": self.counts["rejected"],
            "refused": {code: sorted(ids) for code, ids in sorted(self.refused.items())},
            "refused_count": self.counts["refused"],
            "duplicates": {"same_id": sorted(self.same_id_twice),
                           "same_content": self.same_content},
        }


@dataclass
class _Dedup:
    """Duplicates within one file: an id seen before, and content seen under another id."""

    by_id: dict[str, str] = field(default_factory=dict)
    by_content: dict[str, str] = field(default_factory=dict)

    def judge(self, wire: dict[str, Any], report: Report) -> bool:
        """True when the memory should be sent."""
        mem_id, digest = wire["id"], _content_digest(wire["memory"])
        earlier = self.by_id.get(mem_id)
        if earlier is not None:
            if earlier != digest:
                report.refuse(mem_id, LEDGER_INVALID)  # one id, two contents
            else:
                report.same_id_twice.append(mem_id)
            return False
        self.by_id[mem_id] = digest
        first = self.by_content.get(digest)
        if first is not None:
            report.same_content.append([mem_id, first])
            return False
        self.by_content[digest] = mem_id
        return True


class ServiceRefused(Exception):
    """The route refused a whole batch; carries the status and the error code only."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__(f"{status} {code}")
        self.status, self.code = status, code


def send(base_url: str, token: str, workspace: str, purpose: str,
         batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """POST one batch; the per-memory results."""
    body = json.dumps({"workspace_id": workspace, "purpose_ref": purpose,
                       "memories": batch}).encode("utf-8")
    if not base_url.startswith(("http://", "https://")):
        raise ServiceRefused(0, "INVALID_URL")
    request = urllib.request.Request(  # noqa: S310 (http or https only, checked above)
        base_url.rstrip("/") + ROUTE, data=body, method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            code = str(json.loads(exc.read())["error"]["code"])
        except (ValueError, KeyError, TypeError):
            code = "UNKNOWN"
        raise ServiceRefused(exc.code, code) from None
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise ServiceRefused(502, "INVALID_RESPONSE")
    return results


Post = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
"""One batch to the route → its per-memory results (``send`` bound to a service)."""


def migrate(stream: IO[str], post: Post) -> Report:
    """Stream the export through the route, one bounded batch at a time; the report."""
    report, dedup, batch = Report(), _Dedup(), []
    for item in memories(stream):
        wire = to_wire(item)
        if wire is None:
            mem_id = item.get("id") if isinstance(item, dict) else None
            report.refuse(mem_id if isinstance(mem_id, str) else "?", "INVALID_SCHEMA")
            continue
        if not dedup.judge(wire, report):
            continue
        batch.append(wire)
        if len(batch) == BATCH_SIZE:
            _tally(post(batch), report)
            batch = []
    if batch:
        _tally(post(batch), report)
    return report


def _tally(results: list[dict[str, Any]], report: Report) -> None:
    for result in results:
        status, mem_id = str(result.get("status")), str(result.get("id"))
        if status == "refused":
            report.refuse(mem_id, str(result.get("code")))
        else:
            report.counts[status] += 1


def run(args: argparse.Namespace) -> int:
    """Import the mem0 export ``args.file`` into ``args.workspace``; the exit status."""
    try:
        with open(args.file, encoding="utf-8") as stream:
            report = migrate(stream, functools.partial(
                send, args.url, args.token, args.workspace, args.purpose))
    except (ExportInvalid, UnicodeDecodeError):
        print(json.dumps({"error": "INVALID_SCHEMA",
                          "message": "The file is not a mem0 export."}), file=sys.stderr)
        return 2
    except ServiceRefused as refused:
        print(json.dumps({"error": refused.code, "status": refused.status}), file=sys.stderr)
        return 1
    print(json.dumps(report.as_json(), indent=2, sort_keys=True))
    return 1 if LEDGER_INVALID in report.refused else 0
