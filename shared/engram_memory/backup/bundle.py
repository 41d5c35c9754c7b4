"""The bundle format: one JSON Lines file, streamed, self-verifying (docs/backup.md).

Every line is the RFC 8785 canonical JSON of one object, then ``\\n``. In order: one
``header``; the ``record`` lines; the ``tombstone`` lines; the ``event`` lines (the journal,
cursor 1 up to the bundle's cursor); one ``manifest``. The manifest names the tenant, the
workspace, the cursor range, the count of each part, the SHA-256 of each part's exact bytes
(the header counts as a part) and the journal head. Because every line must be canonical,
every value is cross-checked and the file must end right after the manifest's newline, a
bundle with any byte changed does not verify.

A part's digest is a SHA-256 chain over its lines (``h = SHA-256(h ‖ line)`` from 32 zero
bytes), not one SHA-256 of the concatenation: its state is one hex string, so a server can
verify a bundle across many upload requests and resume after an interruption
(``VerifierState``). Records come in strictly ascending ``record_id`` order and tombstones in
strictly ascending ``payload_digest`` order, so duplicates are caught with constant state.
The bundle digest is the SHA-256 of the manifest line, which commits to everything else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from engram_memory.domain.canonical import canonical_json, record_id_for
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import BackupInvalid, CursorGap, JournalCorrupt
from engram_memory.domain.journal import JournalEvent, JournalHead, verify_chain
from engram_memory.domain.lifecycle import State
from engram_memory.domain.records import payload_digest, record_digest_for

FORMAT = "engram-bundle/1"
PARTS = ("header", "records", "tombstones", "journal")
_KIND_PART = {"header": "header", "record": "records", "tombstone": "tombstones",
              "event": "journal"}
_ORDER = {"header": 0, "records": 1, "tombstones": 2, "journal": 3, "manifest": 4}
RESTORABLE_STATES = frozenset({State.ACCEPTED_CURRENT.value, State.ACCEPTED_DISPUTED.value,
                               State.HISTORICAL.value, State.EXPIRED.value,
                               State.TRUST_INVALID.value})
"""A record line carries content, so it is in one of these states (never tombstoned)."""


class BundleProblem(BackupInvalid):
    """BACKUP_INVALID with what failed (a fixed phrase, never content)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


def line(obj: Mapping[str, Any]) -> bytes:
    """One bundle line: canonical JSON and a newline."""
    return canonical_json(dict(obj)) + b"\n"


def effective_payload_of(view: Mapping[str, Any]) -> dict[str, Any]:
    """The effective payload a record view was built from (payload schema 2)."""
    payload: dict[str, Any] = {"schema_version": 2}
    for name in ("purpose_ref", "valid_time", "components", "primary_component_id",
                 "primary_event", "citations", "retention", "reconciliation"):
        if name in view:
            payload[name] = view[name]
    return payload


def chain(previous: str, data: bytes) -> str:
    """The next link of a part's SHA-256 chain (hex)."""
    return hashlib.sha256(bytes.fromhex(previous) + data).hexdigest()


_ZERO = "0" * 64


def _fresh_parts() -> dict[str, str]:
    return dict.fromkeys(PARTS, _ZERO)


def _fresh_counts() -> dict[str, int]:
    return dict.fromkeys(PARTS, 0)


def _manifest(tenant_id: str, workspace_id: str, cursor: int, counts: Mapping[str, int],
              parts: Mapping[str, str], head: JournalHead) -> dict[str, Any]:
    return {
        "kind": "manifest", "format": FORMAT, "tenant_id": tenant_id,
        "workspace_id": workspace_id,
        "cursor_range": {"from": 1 if cursor else 0, "to": cursor},
        "counts": {part: counts[part] for part in PARTS if part != "header"},
        "parts": {part: "sha256:" + parts[part] for part in PARTS},
        "journal_head": {"cursor": head.cursor, "event_digest": head.event_digest},
    }


class BundleWriter:
    """Writes one bundle to a binary stream, chaining each part as it goes (bounded memory)."""

    def __init__(self, out: IO[bytes], tenant_id: str, workspace_id: str, cursor: int) -> None:
        self._out, self._cursor = out, cursor
        self._tenant, self._workspace = tenant_id, workspace_id
        self._parts, self._counts = _fresh_parts(), _fresh_counts()
        self._part = "header"
        self._head = JournalHead()
        self._emit("header", {"kind": "header", "format": FORMAT, "tenant_id": tenant_id,
                              "workspace_id": workspace_id, "cursor": cursor})

    def _emit(self, part: str, obj: Mapping[str, Any]) -> None:
        if _ORDER[part] < _ORDER[self._part]:
            raise ValueError("bundle parts out of order")
        self._part = part
        data = line(obj)
        self._parts[part] = chain(self._parts[part], data)
        self._counts[part] += 1
        self._out.write(data)

    def record(self, entry: Mapping[str, Any]) -> None:
        """One record line (``entry`` as the export route serves it)."""
        self._emit("records", {"kind": "record", **entry})

    def tombstone(self, entry: Mapping[str, Any]) -> None:
        """One tombstone line (digests and cursors only)."""
        self._emit("tombstones", {"kind": "tombstone", **entry})

    def event(self, entry: Mapping[str, Any]) -> None:
        """One journal event as stored: its body and its digest."""
        self._emit("journal", {"kind": "event", **entry})
        self._head = JournalHead(cursor=int(entry["event"]["cursor"]),
                                 event_digest=str(entry["event_digest"]))

    def finish(self) -> str:
        """Write the manifest (the file ends with it); the bundle digest."""
        data = line(_manifest(self._tenant, self._workspace, self._cursor, self._counts,
                              self._parts, self._head))
        self._part = "manifest"
        self._out.write(data)
        return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class BundleSummary:
    """What a verified bundle holds."""

    tenant_id: str
    workspace_id: str
    cursor: int
    counts: Mapping[str, int]
    journal_head: JournalHead
    bundle_digest: str


@dataclass(slots=True)
class VerifierState:
    """Everything a verifier carries between lines: small and JSON-serializable."""

    tenant_id: str = ""
    workspace_id: str = ""
    cursor: int = -1
    part: str = ""
    parts: dict[str, str] = field(default_factory=_fresh_parts)
    counts: dict[str, int] = field(default_factory=_fresh_counts)
    head_cursor: int = 0
    head_digest: str = JournalHead().event_digest
    last_key: str = ""
    manifest_digest: str = ""

    def to_json(self) -> dict[str, Any]:
        """The state as a JSON object."""
        return asdict(self)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> VerifierState:
        """Inverse of :meth:`to_json`."""
        return cls(**dict(value))


def _parse(raw: bytes) -> dict[str, Any]:
    if not raw.endswith(b"\n"):
        raise BundleProblem("a line is not terminated (truncated file or trailing bytes)")
    try:
        obj = json.loads(raw)
    except ValueError:
        raise BundleProblem("a line is not JSON") from None
    if not isinstance(obj, dict) or line(obj) != raw:
        raise BundleProblem("a line is not canonical JSON")
    return obj


def _check_record(obj: Mapping[str, Any], source: Scope) -> None:
    try:
        view = obj["record"]
        effective = effective_payload_of(view)
        digest_ok = (record_digest_for(source, effective) == obj["record_digest"]
                     and view["record_digest"] == obj["record_digest"]
                     and record_id_for(obj["record_digest"]) == obj["record_id"]
                     and view["record_id"] == obj["record_id"]
                     and payload_digest(effective) == obj["payload_digest"])
        state_ok = obj["state"] in RESTORABLE_STATES
    except (KeyError, TypeError, ValueError, AttributeError):
        raise BundleProblem("a record line is malformed") from None
    if not digest_ok:
        raise BundleProblem(f"record {obj.get('record_id')} does not match its record_digest")
    if not state_ok:
        raise BundleProblem(f"record {obj.get('record_id')} has a state without content")


class Verifier:
    """Checks a bundle line by line; ``state`` can be saved and a new Verifier resumed."""

    def __init__(self, state: VerifierState | None = None) -> None:
        self.state = state or VerifierState()

    def feed(self, raw: bytes) -> dict[str, Any]:
        """Check one line; the parsed object. BundleProblem names what failed."""
        st = self.state
        if st.manifest_digest:
            raise BundleProblem("bytes after the manifest")
        obj = _parse(raw)
        kind = obj.get("kind")
        if kind == "manifest":
            self._manifest(obj, raw)
            return obj
        part = _KIND_PART.get(str(kind))
        if part is None:
            raise BundleProblem("a line of unknown kind")
        if (part == "header") != (st.part == "") or (
                st.part and _ORDER[part] < _ORDER[st.part]):
            raise BundleProblem("parts out of order")
        if part != st.part:
            st.last_key = ""
        st.part = part
        st.parts[part] = chain(st.parts[part], raw)
        st.counts[part] += 1
        getattr(self, "_" + part)(obj)
        return obj

    def _header(self, obj: Mapping[str, Any]) -> None:
        if obj.get("format") != FORMAT or set(obj) != {
                "kind", "format", "tenant_id", "workspace_id", "cursor"}:
            raise BundleProblem("unknown bundle format")
        if not isinstance(obj["cursor"], int) or obj["cursor"] < 0:
            raise BundleProblem("the header's cursor is malformed")
        self.state.tenant_id = str(obj["tenant_id"])
        self.state.workspace_id = str(obj["workspace_id"])
        self.state.cursor = obj["cursor"]

    def _ordered(self, key: Any, what: str) -> None:
        if not isinstance(key, str) or key <= self.state.last_key:
            raise BundleProblem(f"{what} out of order or repeated")
        self.state.last_key = key

    def _records(self, obj: Mapping[str, Any]) -> None:
        _check_record(obj, Scope(self.state.tenant_id, self.state.workspace_id))
        self._ordered(obj["record_id"], "records")

    def _tombstones(self, obj: Mapping[str, Any]) -> None:
        if set(obj) != {"kind", "payload_digest", "record_id", "cursor"}:
            raise BundleProblem("a tombstone line is malformed")
        self._ordered(obj["payload_digest"], "tombstones")

    def _journal(self, obj: Mapping[str, Any]) -> None:
        body, event_digest = obj.get("event"), obj.get("event_digest")
        if not isinstance(body, dict) or not isinstance(event_digest, str) or set(obj) != {
                "kind", "event", "event_digest"}:
            raise BundleProblem("a journal line is malformed")
        head = JournalHead(self.state.head_cursor, self.state.head_digest)
        try:
            head = verify_chain([JournalEvent(body=body, event_digest=event_digest)], head)
        except (CursorGap, JournalCorrupt):
            raise BundleProblem(
                f"the journal chain breaks after cursor {head.cursor}") from None
        self.state.head_cursor, self.state.head_digest = head.cursor, head.event_digest

    def _manifest(self, manifest: Mapping[str, Any], raw: bytes) -> None:
        st = self.state
        if not st.part:
            raise BundleProblem("the header is missing")
        expected = _manifest(st.tenant_id, st.workspace_id, st.cursor, st.counts, st.parts,
                             JournalHead(st.head_cursor, st.head_digest))
        for name, value in expected.items():
            if manifest.get(name) != value:
                raise BundleProblem(f"the manifest's {name} does not match the bundle")
        if set(manifest) != set(expected):
            raise BundleProblem("the manifest has unknown fields")
        if st.head_cursor != st.cursor:
            raise BundleProblem("the journal does not reach the bundle's cursor")
        st.manifest_digest = "sha256:" + hashlib.sha256(raw).hexdigest()

    def finish(self) -> BundleSummary:
        """The summary of a complete bundle (BundleProblem when the manifest never came)."""
        st = self.state
        if not st.manifest_digest:
            raise BundleProblem("the manifest is missing (truncated bundle)")
        return BundleSummary(
            tenant_id=st.tenant_id, workspace_id=st.workspace_id, cursor=st.cursor,
            counts={part: st.counts[part] for part in PARTS if part != "header"},
            journal_head=JournalHead(st.head_cursor, st.head_digest),
            bundle_digest=st.manifest_digest)


def read_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The raw lines of a bundle stream, newline kept."""
    yield from iter(stream.readline, b"")


def verify(lines: Iterable[bytes]) -> BundleSummary:
    """Verify a whole bundle (bounded memory)."""
    verifier = Verifier()
    for raw in lines:
        verifier.feed(raw)
    return verifier.finish()


def verify_file(path: str) -> BundleSummary:
    """Verify the bundle at ``path``."""
    with open(path, "rb") as stream:
        return verify(read_lines(stream))
