"""The one mutation flow: every write use case, and every system write, commits through here.

Read top to bottom, :class:`MutationPipeline` is one attempt in the order it runs:

1. ``run`` runs attempts until one answers: a lost race re-runs the attempt
   (``with_rereads``), whose read then reports the contract outcome.
2. ONE read: the use case's items, the idempotency entry and the journal head. A tool whose
   target's state must not leak (``state_behind_gate``: withdraw, forget) reads its
   approval instead of its target, and its target only once the approval holds: an
   unapproved call answers gate_failed after the same single read whatever the target
   (issue 26 item 2).
3. The replay of a stored result (``replayed``; DIGEST_CONFLICT for another intent).
4. ``check`` (refusals that come before the gate's consumption) → the consumption →
   ``decide`` (the rest of the work, e.g. sealing or decrypting).
5. The commit (``commit_fenced``) of what ``decide`` builds on a head, rebuilt on a moved
   head; a gate refusal at the commit says DIGEST_CONFLICT when it should.
6. A refusal that may come from the commit of the caller's own key reads the key again: a
   replay if it was committed.

Below the class, the steps the system writes share (expiry, reapply-forgets use
``commit_fenced``, ``with_rereads`` and ``stored_result``), then the bounds of both retry
loops (``RetryPolicy``, ``Backoff``): past them the caller gets FENCE_LOST (retriable).
The rules the flow applies are the domain's (intent digests, the confirmation verdict).
Adding a mutation = one module with a :class:`Mutation`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, NotRequired, Protocol, TypedDict, TypeVar, Unpack

from engram_memory.contract.outputs import dump_value
from engram_memory.domain.confirmation import ConfirmationState, explain, readable_ref, verdict_on
from engram_memory.domain.errors import (
    AlreadyTerminal,
    BlobMissing,
    DigestConflict,
    EngramError,
    FenceLost,
    GateFailed,
    IllegalTransition,
    NotFound,
)
from engram_memory.domain.intent import intent_digest, operation_digest, target_of
from engram_memory.domain.journal import Actor
from engram_memory.services.ports.write import (
    Change,
    Clock,
    CommitConflict,
    ConfirmationGate,
    ConflictKind,
    GateConsumption,
    IdempotencyEntry,
    MemoryStore,
    MutationPlan,
    ReadRequest,
    ReadResult,
)

if TYPE_CHECKING:
    from engram_memory.contract.outputs import OutputModel
    from engram_memory.domain.context import InvocationContext, Scope, Tool
    from engram_memory.domain.journal import JournalEvent, JournalHead

C = TypeVar("C")
V = TypeVar("V")

Sleep = Callable[[float], None]
TimeLeft = Callable[[], float | None]
"""The invocation's remaining time in seconds (the earlier of the host's deadline and the
Lambda's own end, bound by the runtime), or None where nothing bounds it (a maintenance
job, a unit test): then only the attempts bound a retry loop."""


def no_deadline() -> float | None:
    """The time left when nothing bounds the invocation."""
    return None


# --- The call, and what a use case gives the flow ------------------------------------------


@dataclass(frozen=True, slots=True)
class Idem:
    """The idempotency reservation a commit makes: who, which key, which tool and intent."""

    principal: str
    key: str
    tool: str
    intent: str


@dataclass(frozen=True, slots=True)
class AgentCall:
    """An agent's tool call as the gate sees it (who, which tool, which arguments)."""

    ctx: InvocationContext
    tool: Tool
    arguments: Mapping[str, Any]

    @property
    def target(self) -> str:
        """The candidate or record id the call acts on ("" for capture)."""
        return target_of(self.tool, self.arguments)

    @property
    def operation(self) -> str:
        """The operation digest an approval of this call names."""
        return operation_digest(self.tool, self.arguments)

    def consumption(self, now_ms: int) -> GateConsumption:
        """The approval this call's commit consumes; GateFailed when it names none."""
        return GateConsumption.of(self.ctx, self.tool, self.target, self.operation, now_ms)


@dataclass(frozen=True, slots=True)
class MutationCall:
    """Who commits what: the scope, the idempotency reservation, the journal actor and,
    for an agent's call, the call the gate judges (None: the host's own route)."""

    scope: Scope
    idem: Idem
    actor: Actor
    agent: AgentCall | None = None

    @classmethod
    def of_agent(cls, ctx: InvocationContext, tool: Tool,
                 arguments: Mapping[str, Any]) -> MutationCall:
        """An agent's call of ``tool`` with canonical ``arguments``."""
        idem = Idem(ctx.principal, str(arguments["idempotency_key"]), tool.value,
                    intent_digest(tool, arguments))
        # The journal actor: the host-bound principal, agent and session.
        actor = Actor(principal=ctx.principal, agent_id=ctx.agent_id,
                      session_id=ctx.session_id)
        return cls(ctx.scope, idem, actor, AgentCall(ctx, tool, arguments))


@dataclass(frozen=True, slots=True)
class Built:
    """What one decided mutation commits on a head, and the tool value it returns."""

    event: JournalEvent
    changes: tuple[Change, ...]
    value: dict[str, Any]


Build = Callable[["JournalHead"], Built]


class Mutation(Protocol, Generic[C]):
    """One attempt of a use case: what it reads, checks, decides and commits.

    ``value_model`` re-validates a stored result on replay, with ``replay_fields`` set;
    ``state_behind_gate``: the approval of this exact call is read and checked before the
    target is read at all (withdraw, forget): an unapproved call does the same work, and
    gets the same gate_failed, whatever the target.
    """

    @property
    def value_model(self) -> type[OutputModel]:
        """The tool's value model."""
        ...

    @property
    def replay_fields(self) -> Mapping[str, Any]:
        """What a replayed value says differently (``replayed``, capture's status)."""
        ...

    @property
    def state_behind_gate(self) -> bool:
        """True when nothing about the target may be judged before the approval."""
        ...

    def reads(self) -> ReadRequest:
        """The items besides the idempotency entry and the head, read in the same trip."""
        ...

    def check(self, found: ReadResult, now_ms: int) -> C:
        """Refusals that come before the gate; what ``decide`` needs."""
        ...

    def decide(self, checked: C, found: ReadResult, now_ms: int) -> Build:
        """The rest of the work, after the gate; how to build the commit on a head."""
        ...


# --- The flow: one attempt, top to bottom ---------------------------------------------------


class MutationPipeline:
    """Runs :class:`Mutation` attempts against the store, the gate and the clock."""

    def __init__(self, *, store: MemoryStore, gate: ConfirmationGate, clock: Clock,
                 sleep: Sleep, time_left: TimeLeft = no_deadline) -> None:
        self.store = store
        self.gate = gate
        self.clock = clock
        self.sleep = sleep
        # The invocation's remaining time: lost commits retry within it (``Backoff``).
        self.time_left = time_left

    def run(self, call: MutationCall, new_attempt: Callable[[], Mutation[C]]) -> dict[str, Any]:
        """Run attempts (a fresh ``new_attempt()`` each) until one answers; the value."""
        return with_rereads(lambda: self._attempt(call, new_attempt()), self.sleep,
                            self.time_left)

    def _attempt(self, call: MutationCall, use: Mutation[C]) -> dict[str, Any]:
        idem = call.idem
        gate_first = self._gate_first(call, use)
        found = self._read(call, use, gate_first)
        stored = replayed(found.idempotency, idem.tool, idem.intent)
        if stored is not None:
            return _replay(use, stored)
        try:
            return self._decide_and_commit(call, use, found, gate_first)
        except EngramError as refusal:
            if not _may_follow_own_commit(refusal, found):
                raise
            # Our key was free when read, but what refused us may be the commit of this very
            # key by an identical call (a retry racing its first attempt): its target or
            # approval was read after that commit. The key decides: a replay if committed.
            stored = stored_result(self.store, call.scope, idem.principal, idem.key,
                                   idem.tool, idem.intent)
            if stored is None:
                raise
            return _replay(use, stored)

    @staticmethod
    def _gate_first(call: MutationCall, use: Mutation[C]) -> AgentCall | None:
        """The agent call whose approval is judged before its target (None: not such a
        tool)."""
        agent = call.agent
        return agent if agent is not None and use.state_behind_gate else None

    def _read(self, call: MutationCall, use: Mutation[C],
              gate_first: AgentCall | None) -> ReadResult:
        """The attempt's ONE read: the idempotency entry and the head, with the use case's
        items, or with the approval instead when the target waits for the gate."""
        key = (call.idem.principal, call.idem.key)
        if gate_first is None:
            return self.store.read_together(
                call.scope, replace(use.reads(), idempotency=key, head=True))
        # None when the token names no reference, or one no approval can have (malformed:
        # such a call is gate_failed after the replay).
        ref = readable_ref(gate_first.ctx.confirmation_ref)
        return self.store.read_together(
            call.scope, ReadRequest(idempotency=key, head=True, confirmation_ref=ref))

    def _decide_and_commit(self, call: MutationCall, use: Mutation[C], found: ReadResult,
                           gate_first: AgentCall | None) -> dict[str, Any]:
        now_ms = self.clock.now_ms()
        if gate_first is not None:
            found = self._target_once_approved(call, use, found, gate_first, now_ms)
        checked = use.check(found, now_ms)
        consumption = self._consumption(call, now_ms)
        build = use.decide(checked, found, now_ms)
        return self._commit(call, build, consumption, found.head, now_ms)

    def _target_once_approved(self, call: MutationCall, use: Mutation[C], found: ReadResult,
                              agent: AgentCall, now_ms: int) -> ReadResult:
        """The gate answers before the target's state; then the target, read beside what
        the first read found.

        Anything but a usable approval of exactly this call (``found.confirmation``) is
        GateFailed (DigestConflict for an approval of this call with other arguments)
        before the target is looked at, so an unapproved agent learns nothing about it, by
        the answer or by the time it takes: no state refusal (NOT_FOUND, ALREADY_TERMINAL,
        ILLEGAL_TRANSITION), no commit attempt. The commit's consuming element stays the
        authority for an approved call that goes on to commit.
        """
        explain(verdict_on(found.confirmation, agent.ctx.principal, agent.tool.value,
                           agent.target, agent.operation, now_ms), refused_by_commit=False)
        return replace(self.store.read_together(call.scope, use.reads()),
                       idempotency=found.idempotency, head=found.head)

    def _consumption(self, call: MutationCall, now_ms: int) -> GateConsumption | None:
        agent = call.agent
        if agent is None or not agent.ctx.requires_confirmation(agent.tool):
            return None
        return agent.consumption(now_ms)

    def _commit(self, call: MutationCall, build: Build, consumption: GateConsumption | None,
                head: JournalHead | None, now_ms: int) -> dict[str, Any]:
        """Commit what ``build`` makes on a head (``head``: the one the read found)."""
        idem = call.idem

        def plan(on: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
            built = build(on)
            return MutationPlan(
                scope=call.scope, principal=idem.principal, idempotency_key=idem.key,
                tool=idem.tool, intent_digest=idem.intent, result=built.value, head=on,
                event=built.event, changes=built.changes, gate=consumption, at_ms=now_ms,
            ), built.value

        with self._gate_refusal_explained(call, now_ms):
            return commit_fenced(self.store, call.scope, plan, self.sleep, head,
                                 self.time_left)

    @contextmanager
    def _gate_refusal_explained(self, call: MutationCall, now_ms: int) -> Iterator[None]:
        """Around a commit with a gate element: a refusal says DIGEST_CONFLICT when it should.

        The approval is read only when the commit was refused, so a gated call that goes
        through costs no read of its confirmation.
        """
        agent = call.agent
        try:
            yield
        except GateFailed:
            if agent is not None:
                self.gate.explain_refusal(agent.ctx, agent.tool, agent.target,
                                          agent.operation, now_ms)
            raise


def _replay(use: Mutation[C], stored: Mapping[str, Any]) -> dict[str, Any]:
    """The committed value, as a replay says it."""
    return dump_value(use.value_model.model_validate({**stored, **use.replay_fields}))


# What a commit of the caller's own key can make an identical call meet after it read the
# key as free: the target moved (withdrawn, tombstoned, accepted, shredded).
_STATE_REFUSALS = (NotFound, AlreadyTerminal, IllegalTransition, BlobMissing)


def _may_follow_own_commit(refusal: EngramError, found: ReadResult) -> bool:
    """True when ``refusal`` may come from the commit of the caller's own key: a state
    refusal, or gate_failed on an approval already consumed. (gate_failed on an approval
    absent or never granted cannot: such a call stays at its one read, whatever the target.)
    """
    if isinstance(refusal, _STATE_REFUSALS):
        return True
    approval = found.confirmation
    return (isinstance(refusal, GateFailed) and approval is not None
            and approval.state is ConfirmationState.CONSUMED)


# --- The steps every commit shares (the flow above; expiry and reapply-forgets) -------------


def with_rereads(attempt: Callable[[], V], sleep: Sleep,
                 time_left: TimeLeft = no_deadline) -> V:
    """Run ``attempt``; after a lost race (a taken key, a moved state), re-run it so its
    reads report the outcome (replay, DIGEST_CONFLICT, the state's refusal)."""
    backoff = Backoff(REREAD_POLICY, sleep, time_left)
    while True:
        try:
            return attempt()
        except CommitConflict:
            if not backoff.again():
                raise FenceLost from None


def replayed(entry: IdempotencyEntry | None, tool: str, intent: str) -> Mapping[str, Any] | None:
    """The committed result an idempotency entry holds for this intent; DigestConflict if
    the key was used for another tool or intent; None when the key is free."""
    if entry is None:
        return None
    if entry.tool != tool or entry.intent_digest != intent:
        raise DigestConflict
    return entry.result


def stored_result(
    store: MemoryStore, scope: Scope, principal: str, key: str, tool: str, intent: str
) -> Mapping[str, Any] | None:
    """The committed result of ``key`` when it replays this intent; DigestConflict if not."""
    return replayed(store.get_idempotency(scope, principal, key), tool, intent)


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
    ``time_left``. ``head``: the head the caller already read together with its other
    reads (no read of its own then). Only a conflict on the head alone is retried here: a
    taken idempotency key or a moved state goes back to the caller, whose next read
    answers replay, DIGEST_CONFLICT or the state's refusal.
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


# --- How long a lost commit keeps trying -----------------------------------------------------
# Under contention the loser waits a full-jitter exponential backoff between attempts
# (uniform in [0, min(cap, base·2^n)]), so the writers of one workspace spread out instead
# of colliding again in step, and it stops at the first of: ``attempts`` commits sent, or
# too little time left in the invocation to sleep and still send one more commit and answer
# (``reserve_s``). Only then does the agent see FENCE_LOST: the workspace really did not
# have a free turn for this call in the time it had.


class Jitter(Protocol):
    """The random source of the backoff (``random.Random``-like)."""

    def uniform(self, a: float, b: float) -> float:
        """A float uniformly in [a, b]."""
        ...


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounds of one retry loop: attempts in all, backoff base and cap, time kept in reserve."""

    attempts: int
    base_s: float
    cap_s: float
    reserve_s: float

    def ceiling(self, retry: int) -> float:
        """The longest wait before retry number ``retry`` (0 = the first wait)."""
        return min(self.cap_s, self.base_s * float(2 ** min(retry, 30)))


# Rebuilds of one commit on a moved head. Measured on the local service (docs/performance.md,
# "Throughput"): 8 attempts with a 200 ms cap shed a quarter of 16 writers' captures as
# FENCE_LOST while the head still had free turns; the time budget is the real bound.
HEAD_POLICY = RetryPolicy(attempts=64, base_s=0.01, cap_s=0.5, reserve_s=1.0)
# Re-runs of a whole attempt after a taken key or a moved target: its next read answers.
REREAD_POLICY = RetryPolicy(attempts=4, base_s=0.01, cap_s=0.2, reserve_s=1.0)

_SYSTEM_JITTER = secrets.SystemRandom()


class Backoff:
    """One retry loop under a policy: counts attempts, sleeps, says when to give up."""

    def __init__(self, policy: RetryPolicy, sleep: Sleep, time_left: TimeLeft = no_deadline,
                 jitter: Jitter = _SYSTEM_JITTER) -> None:
        """Start before the first attempt; ``sleep``, ``time_left`` and ``jitter`` are ports."""
        self._policy = policy
        self._sleep = sleep
        self._time_left = time_left
        self._jitter = jitter
        self._attempts = 1  # the first attempt is under way
        self._waits = 0

    @property
    def attempts(self) -> int:
        """Attempts started so far (the first included)."""
        return self._attempts

    def again(self, *, wait: bool = True) -> bool:
        """Before another attempt: wait (unless ``wait`` is False) and return True, or
        return False, without waiting, when the attempts or the time are used up."""
        policy = self._policy
        if self._attempts >= policy.attempts:
            return False
        delay = self._jitter.uniform(0.0, policy.ceiling(self._waits)) if wait else 0.0
        left = self._time_left()
        if left is not None and left - delay < policy.reserve_s:
            return False
        if wait:
            self._waits += 1
            self._sleep(delay)
        self._attempts += 1
        return True


# --- What a use case is built with ----------------------------------------------------------


class PipelinePorts(TypedDict):
    """The ports every mutation use case is built with (keyword arguments)."""

    store: MemoryStore
    gate: ConfirmationGate
    clock: Clock
    sleep: Sleep
    time_left: NotRequired[TimeLeft]


class PipelineService:
    """A use case run by the pipeline over the store, the gate and the clock."""

    def __init__(self, **ports: Unpack[PipelinePorts]) -> None:
        self._pipeline = MutationPipeline(**ports)
