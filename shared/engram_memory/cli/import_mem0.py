"""``engram-memory import --from mem0``: migrate a mem0 export into a workspace.

Reads mem0's memory export (``get_all``'s JSON: a bare list, or ``{"results": [...]}``
with ``count``/``next``/``relations`` beside it) twice, streaming: the first pass checks the
whole file and refuses a malformed one with ``MIGRATION_LEDGER_INVALID`` before anything is
sent; the second sends batches bounded by count and bytes to ``POST /host/migrations/mem0``.
Memories the route did not finish (``deferred``, ``retry``) and batches lost in transit are
sent again; the migration ledger makes every resend, and every rerun, import nothing twice.
Prints a JSON report: ids and contract codes only, never content. docs/migration-mem0.md.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import time
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from engram_memory.cli.host_client import HostCallFailed, HostClient, progress_bar, token_from
from engram_memory.gate.migration import MAX_BATCH, MAX_BATCH_BYTES, Mem0Memory

READ_BYTES = 65_536
ROUTE = "/host/migrations/mem0"
LEDGER_INVALID = "MIGRATION_LEDGER_INVALID"
MAX_STALLS = 8
"""Requests in a row that settle nothing (lost in transit, or all deferred) before the run
stops; a rerun resumes it."""
TRANSIENT_STATUSES = frozenset({408, 429, 502, 503, 504})
"""Answers after which a batch is sent again (the ledger makes the resend safe)."""
_UNSETTLED = frozenset({"retry", "deferred"})
_WS = " \t\r\n"


class ExportInvalid(Exception):
    """The file is not a well-formed mem0 export; ``reason`` says where, never content."""

    def __init__(self, reason: str = "the file is not a mem0 export (JSON list or results)"):
        super().__init__(reason)
        self.reason = reason


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


def _ms(value: object, where: str) -> int | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ExportInvalid(f"{where}: a time is not an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ExportInvalid(f"{where}: a time is not an ISO 8601 string") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # mem0 writes naive times in UTC by default
    return int(parsed.timestamp() * 1000)


def to_wire(item: object, index: int = 0) -> dict[str, Any]:
    """The fields the route takes, checked by the route's own model; ExportInvalid when the
    entry is not a mem0 memory (no id, no text, no time, a bound exceeded)."""
    where = f"entry {index}"
    if not isinstance(item, dict):
        raise ExportInvalid(f"{where}: not an object")
    mem_id, text = item.get("id"), item.get("memory")
    if not isinstance(mem_id, str) or not isinstance(text, str) or not text.strip():
        raise ExportInvalid(f"{where}: no string id and non-blank memory text")
    wire: dict[str, Any] = {"id": mem_id, "memory": unicodedata.normalize("NFC", text)}
    for source, target in (("created_at", "created_at_ms"), ("updated_at", "updated_at_ms")):
        at = _ms(item.get(source), where)
        if at is not None:
            wire[target] = at
    for owner in ("user_id", "agent_id"):
        value = item.get(owner)
        if isinstance(value, str) and value:
            wire[owner] = unicodedata.normalize("NFC", value)
        elif value not in (None, ""):
            raise ExportInvalid(f"{where}: {owner} is not a string")
    try:
        Mem0Memory.model_validate(wire)
    except ValidationError:
        raise ExportInvalid(f"{where}: id, text, time or owner out of bounds") from None
    return wire


def _content_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Plan:
    """The first pass over a well-formed file: what to send, what duplicates to report."""

    entries: int = 0
    send: set[int] = field(default_factory=set)
    same_id_twice: list[str] = field(default_factory=list)
    same_content: list[list[str]] = field(default_factory=list)


def plan(stream: IO[str]) -> Plan:
    """Check the whole export (ExportInvalid on the first fault, nothing sent yet) and pick
    the entries to send: the first of each id, and the first of each text."""
    found = Plan()
    by_id: dict[str, str] = {}
    by_content: dict[str, str] = {}
    for index, item in enumerate(memories(stream)):
        wire = to_wire(item, index)
        mem_id, digest = wire["id"], _content_digest(wire["memory"])
        found.entries += 1
        earlier = by_id.get(mem_id)
        if earlier is not None:
            if earlier != digest:
                raise ExportInvalid(f"entry {index}: id {mem_id} maps to two contents")
            found.same_id_twice.append(mem_id)
            continue
        by_id[mem_id] = digest
        first = by_content.get(digest)
        if first is not None:
            found.same_content.append([mem_id, first])
            continue
        by_content[digest] = mem_id
        found.send.add(index)
    return found


def to_send(stream: IO[str], chosen: Plan) -> Iterator[dict[str, Any]]:
    """The second pass: the wire form of every entry the plan sends, in file order."""
    for index, item in enumerate(memories(stream)):
        if index in chosen.send:
            yield to_wire(item, index)


@dataclass
class Report:
    """What the import did, by id and contract code only."""

    counts: Counter[str] = field(default_factory=Counter)
    refused: dict[str, list[str]] = field(default_factory=dict)
    same_id_twice: list[str] = field(default_factory=list)
    same_content: list[list[str]] = field(default_factory=list)
    held: list[dict[str, str]] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)

    def settle(self, result: dict[str, Any]) -> None:
        """Count one memory the route settled."""
        status, mem_id = str(result.get("status")), str(result.get("id"))
        self.counts[status] += 1
        if status == "refused":
            self.refused.setdefault(str(result.get("code")), []).append(mem_id)
        elif status == "held":
            self.held.append({"id": mem_id, "candidate_id": str(result.get("candidate_id"))})

    def as_json(self) -> dict[str, Any]:
        """The printed report."""
        return {
            "imported": self.counts["imported"],
            "already_present": self.counts["already_present"],
            "held": self.counts["held"], "held_candidates": self.held,
            "rejected": self.counts["rejected"],
            "refused": {code: sorted(ids) for code, ids in sorted(self.refused.items())},
            "refused_count": self.counts["refused"],
            "duplicates": {"same_id": sorted(self.same_id_twice),
                           "same_content": self.same_content},
            "unfinished": sorted(self.unfinished),
        }


class Transient(Exception):
    """A batch whose answer was lost or refused for now: send it again."""


Post = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
"""One batch to the route → its per-memory results, or Transient."""


def _take(queue: deque[dict[str, Any]], source: Iterator[dict[str, Any]]
          ) -> list[dict[str, Any]]:
    """The next batch: at most MAX_BATCH memories and MAX_BATCH_BYTES of JSON (one memory
    always fits: the route's model bounds its text to 64 KiB)."""
    batch: list[dict[str, Any]] = []
    size = 0
    while len(batch) < MAX_BATCH:
        if not queue:
            nxt = next(source, None)
            if nxt is None:
                break
            queue.append(nxt)
        cost = len(json.dumps(queue[0], ensure_ascii=False).encode("utf-8")) + 2
        if batch and size + cost > MAX_BATCH_BYTES:
            break
        batch.append(queue.popleft())
        size += cost
    return batch


def send_all(wires: Iterable[dict[str, Any]], post: Post, report: Report,
             sleep: Callable[[float], None] = time.sleep,
             advance: Callable[[int], None] = lambda _: None) -> None:
    """Send every memory until the route settles it; unsettled ones go again first.

    Stops after MAX_STALLS requests in a row that settle nothing, listing what is left as
    ``unfinished`` (a rerun resumes: the ledger skips what is done).
    """
    queue: deque[dict[str, Any]] = deque()
    source = iter(wires)
    stalls = 0
    while batch := _take(queue, source):
        try:
            results = post(batch)
        except Transient:
            results = [{"id": m["id"], "status": "retry"} for m in batch]
        if [r.get("id") for r in results] != [m["id"] for m in batch]:
            raise HostCallFailed(502, "INVALID_RESPONSE")
        again = [m for m, r in zip(batch, results, strict=True)
                 if r.get("status") in _UNSETTLED]
        for result in results:
            if result.get("status") not in _UNSETTLED:
                report.settle(result)
        settled = len(batch) - len(again)
        advance(settled)
        stalls = 0 if settled else stalls + 1
        queue.extendleft(reversed(again))
        if stalls >= MAX_STALLS:
            report.unfinished = [m["id"] for m in queue] + [m["id"] for m in source]
            return
        if stalls:
            sleep(min(30.0, 0.5 * 2 ** stalls))


def migrate(open_file: Callable[[], IO[str]], post: Post,
            sleep: Callable[[float], None] = time.sleep) -> Report:
    """Check the whole file, then send it; the report. ExportInvalid before any request."""
    with open_file() as stream:
        chosen = plan(stream)
    report = Report(same_id_twice=chosen.same_id_twice, same_content=chosen.same_content)
    bar = progress_bar(len(chosen.send), "mem0")
    try:
        with open_file() as stream:
            send_all(to_send(stream, chosen), post, report, sleep,
                     bar.update if bar is not None else lambda _: None)
    finally:
        if bar is not None:
            bar.close()
    return report


def poster(client: HostClient, workspace: str, purpose: str) -> Post:
    """``Post`` over HTTP: transport failures and transient statuses become Transient."""
    import httpx2

    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            answer = client.call("POST", ROUTE, body={
                "workspace_id": workspace, "purpose_ref": purpose, "memories": batch})
        except httpx2.TransportError:
            raise Transient from None
        except HostCallFailed as failed:
            if failed.status in TRANSIENT_STATUSES:
                raise Transient from None
            raise
        results = answer.get("results")
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise HostCallFailed(502, "INVALID_RESPONSE")
        return results

    return post


def _fail(code: str, detail: str, status: int) -> int:
    print(json.dumps({"error": code, "detail": detail}), file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    """Import the mem0 export ``args.file`` into ``args.workspace``; the exit status."""
    token = token_from(args.token)
    if not token or not args.purpose:
        return _fail("USAGE", "--purpose and a maintainer token (--token or "
                              "ENGRAM_MAINTAINER_TOKEN) are required", 2)
    client = HostClient(args.url, token)
    try:
        report = migrate(functools.partial(Path(args.file).open, encoding="utf-8"),
                         poster(client, args.workspace, args.purpose))
    except ExportInvalid as invalid:
        return _fail(LEDGER_INVALID, invalid.reason + "; nothing was imported", 1)
    except UnicodeDecodeError:
        return _fail(LEDGER_INVALID, "the file is not UTF-8; nothing was imported", 1)
    except OSError:
        return _fail("USAGE", "the file cannot be read", 2)
    except HostCallFailed as failed:
        return _fail(failed.code, f"the service refused the migration ({failed.status}); "
                                  "rerun once fixed: nothing is imported twice", 1)
    finally:
        client.close()
    print(json.dumps(report.as_json(), indent=2, sort_keys=True))
    return 1 if LEDGER_INVALID in report.refused or report.unfinished else 0
