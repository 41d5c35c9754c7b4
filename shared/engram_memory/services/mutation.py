"""Store-neutral mechanics every mutation shares: replay detection and fenced commits.

Each use case runs ``attempt`` = read idempotency → read state → decide → commit. A
commit that loses a race is retried here: a moved journal head only rebuilds the event
on the new head (with backoff); a taken idempotency key or a moved state re-runs the whole
attempt, whose first read then reports the contract outcome (replay, DIGEST_CONFLICT,
NOT_FOUND, ...). Bounded (``commit_retry``: attempts, jittered backoff and the
invocation's time left): past that the caller gets FENCE_LOST (retriable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from engram_memory.domain.confirmation import REF_RE, explain, verdict_on
from engram_memory.domain.errors import DigestConflict, FenceLost, GateFailed
from engram_memory.domain.intent import operation_digest, target_of
from engram_memory.domain.journal import Actor
from engram_memory.services.commit_retry import (
    HEAD_POLICY,
    REREAD_POLICY,
    Backoff,
    TimeLeft,
    no_deadline,
)
from engram_memory.services.ports.write import (
    CommitConflict,
    ConfirmationGate,
    ConflictKind,
    IdempotencyEntry,
    MemoryStore,
    MutationPlan,
)

if TYPE_CHECKING:
    from engram_memory.domain.confirmation import Confirmation
    from engram_memory.domain.context import InvocationContext, Scope, Tool
    from engram_memory.domain.journal import JournalHead

V = TypeVar("V")
Sleep = Callable[[float], None]


def stored_result(
    store: MemoryStore, scope: Scope, principal: str, key: str, tool: str, intent: str
) -> Mapping[str, Any] | None:
    """The committed result of ``key`` when it replays this intent; DigestConflict if not."""
    return replayed(store.get_idempotency(scope, principal, key), tool, intent)


def replayed(entry: IdempotencyEntry | None, tool: str, intent: str) -> Mapping[str, Any] | None:
    """The committed result an idempotency entry holds for this intent; DigestConflict if
    the key was used for another tool or intent; None when the key is free."""
    if entry is None:
        return None
    if entry.tool != tool or entry.intent_digest != intent:
        raise DigestConflict
    return entry.result


def commit_fenced(
    store: MemoryStore,
    scope: Scope,
    build: Callable[[JournalHead], tuple[MutationPlan, V]],
    sleep: Sleep,
    head: JournalHead | None = None,
    time_left: TimeLeft = no_deadline,
) -> V:
    """Commit the plan built on the current head; rebuild on a moved head; FENCE_LOST.

    The first conflict that names the head which won is rebuilt on that head at once (one
    other writer got in: no read, no wait). Later conflicts mean contention: the head
    named then is soon stale, so the rebuild waits a jittered backoff and reads the head
    again (measured: rebuilding on the named head every time, with or without waiting,
    doubled FENCE_LOST with 16 writers on one workspace). Bounded by ``HEAD_POLICY`` and
    ``time_left`` (``commit_retry``). ``head``: the head the caller already read together
    with its other reads (no read of its own then). Only a conflict on the head alone is
    retried here: a taken idempotency key or a moved state goes back to the caller, whose
    next read answers replay, DIGEST_CONFLICT or the state's refusal.
    """
    if head is None:
        head = store.journal_head(scope)
    backoff = Backoff(HEAD_POLICY, sleep, time_left)
    while True:
        plan, value = build(head)
        try:
            store.commit(plan)
        except CommitConflict as conflict:
            if conflict.kinds != frozenset({ConflictKind.HEAD}):
                raise
            named = conflict.head
            if backoff.attempts == 1 and named is not None and named.cursor > head.cursor:
                if not backoff.again(wait=False):
                    raise FenceLost from None
                head = named  # one writer got in first: rebuild on its head at once
                continue
            if not backoff.again():
                raise FenceLost from None
            head = store.journal_head(scope)
            continue
        return value


def with_rereads(attempt: Callable[[], V], sleep: Sleep,
                 time_left: TimeLeft = no_deadline) -> V:
    """Run ``attempt``; after a lost race, re-run it so its reads report the outcome."""
    backoff = Backoff(REREAD_POLICY, sleep, time_left)
    while True:
        try:
            return attempt()
        except CommitConflict:
            if not backoff.again():
                raise FenceLost from None


def actor_of(ctx: InvocationContext) -> Actor:
    """The journal actor: the host-bound principal, agent and session."""
    return Actor(principal=ctx.principal, agent_id=ctx.agent_id, session_id=ctx.session_id)


@contextmanager
def gate_refusal_explained(gate: ConfirmationGate, ctx: InvocationContext, tool: Tool,
                           arguments: Mapping[str, Any], now_ms: int) -> Iterator[None]:
    """Around a commit with a gate element: a refusal says DIGEST_CONFLICT when it should.

    The approval is read only when the commit was refused, so a gated call that goes
    through costs no read of its confirmation.
    """
    try:
        yield
    except GateFailed:
        gate.explain_refusal(ctx, tool, target_of(tool, arguments),
                             operation_digest(tool, arguments), now_ms)
        raise


def readable_ref(ctx: InvocationContext) -> str | None:
    """The confirmation reference to read with the target: None when the token names none
    or one no approval can have (malformed; such a call is gate_failed after the replay)."""
    ref = ctx.confirmation_ref
    return ref if ref is not None and REF_RE.fullmatch(ref) is not None else None


def approved_before_state(found: Confirmation | None, ctx: InvocationContext, tool: Tool,
                          arguments: Mapping[str, Any], now_ms: int) -> None:
    """The gate answers before the target's state: return only for a usable approval of
    exactly this call (``found``: its confirmation item, read beside the target).

    Anything else is GateFailed (DigestConflict for an approval of this call with other
    arguments) before the target is looked at, so an unapproved agent learns nothing
    about it, by the answer or by the time it takes: no state refusal (NOT_FOUND,
    ALREADY_TERMINAL, ILLEGAL_TRANSITION), no commit attempt. The commit's consuming
    element stays the authority for an approved call that goes on to commit.
    """
    explain(verdict_on(found, ctx.principal, tool.value, target_of(tool, arguments),
                       operation_digest(tool, arguments), now_ms), refused_by_commit=False)
