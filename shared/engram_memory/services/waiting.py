"""What waits for a human: pending confirmations and candidates held for adjudication.

Read through a sparse index (``adapters/dynamodb/waiting.py``): an item is in it only
while it waits, so a page costs what it returns, whatever the workspace's history.
Nothing here holds memory content: a held candidate's material stays sealed; a
confirmation names its target and the agent's reason reference only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

T = TypeVar("T")
MAX_PAGE = 100
DEFAULT_PAGE = 25
# An opaque page cursor: base64url of the last index sort key, at most this long.
CURSOR_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


@dataclass(frozen=True, slots=True)
class WaitingConfirmation:
    """A confirmation still waiting for its decision (``requested`` / ``awaiting_decision``)."""

    elicitation_ref: str
    state: str
    tool: str
    target: str
    reason: str
    principal: str
    requested_by: str
    created_at_ms: int
    expires_at_ms: int


@dataclass(frozen=True, slots=True)
class WaitingCandidate:
    """A candidate the admission policy held for a human (``pending_adjudication``)."""

    candidate_id: str
    principal: str
    captured_at_ms: int
    held_at_ms: int
    policy_id: str
    policy_version: str
    payload_digest: str


@dataclass(frozen=True, slots=True)
class WaitingPage(Generic[T]):
    """One page, oldest deadline (or hold) first; ``next_cursor`` when more remain."""

    items: Sequence[T]
    next_cursor: str | None


class WaitingList(Protocol):
    """Reads the waiting index of one scope."""

    def confirmations(self, scope: Scope, limit: int,
                      cursor: str | None) -> WaitingPage[WaitingConfirmation]:
        """Pending confirmations, soonest expiry first."""
        ...

    def adjudications(self, scope: Scope, limit: int,
                      cursor: str | None) -> WaitingPage[WaitingCandidate]:
        """Held candidates, oldest hold first."""
        ...
