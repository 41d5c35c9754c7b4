"""The forget ledger's write half: every forget and withdrawal leaves an entry in its commit.

The entry is taken from the move's journal event (ids, digests, cursor, instant), so it can
never carry content; the store puts it in the ledger table inside the same
TransactWriteItems as the move (adapters/dynamodb/forget_ledger.py). The read half, the
reapplication after a point-in-time restore, is services/reapply_forgets.py
(docs/forget-ledger.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from engram_memory.services.ports import LedgerEntry

if TYPE_CHECKING:
    from engram_memory.domain.journal import JournalEvent, JournalHead
    from engram_memory.services.pipeline import Build, Built


def entry_of(event: JournalEvent) -> LedgerEntry:
    """The ledger entry of a forget's or a withdrawal's journal event."""
    body = event.body
    ((subject_key, target_id),) = dict(body["subject"]).items()
    digests = {str(k): str(v) for k, v in dict(body["digests"]).items()}
    return LedgerEntry(operation=str(body["operation"]), subject_key=str(subject_key),
                       target_id=str(target_id), cursor=event.cursor,
                       at_ms=int(body["at_ms"]),
                       digests={**digests, "event_digest": event.event_digest})


def ledgered(build: Build) -> Build:
    """``build`` with the ledger entry of its event added to the commit's changes."""
    def with_entry(head: JournalHead) -> Built:
        built = build(head)
        return replace(built, changes=(*built.changes, entry_of(built.event)))
    return with_entry
