"""The one mutation pipeline every write use case fills in.

An attempt runs: ONE read (the use case's items + the idempotency entry + the journal
head) → replay of a stored result → ``check`` (refusals that come before the gate's
consumption) → the consumption →
``decide`` (the rest of the work, e.g. sealing or decrypting) → ``commit_fenced`` of what
``decide`` builds on a head. A lost race re-runs the attempt (``with_rereads``), whose read
then reports the contract outcome. Adding a mutation = one module with a :class:`Mutation`.

A tool whose target's state must not leak (``state_behind_gate``: withdraw, forget) reads
its approval instead of its target first (with the idempotency entry and the head), and
reads the target only once the approval holds: an unapproved call answers gate_failed
after the same single read whatever the target (issue 26 item 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, NotRequired, Protocol, TypedDict, TypeVar, Unpack

from engram_memory.contract.outputs import dump_value
from engram_memory.domain.errors import (
    AlreadyTerminal,
    BlobMissing,
    EngramError,
    GateFailed,
    IllegalTransition,
    NotFound,
)
from engram_memory.domain.intent import intent_digest, operation_digest, target_of
from engram_memory.services.commit_retry import TimeLeft, no_deadline
from engram_memory.services.confirmation import ConfirmationState
from engram_memory.services.mutation import (
    Sleep,
    actor_of,
    approved_before_state,
    commit_fenced,
    gate_refusal_explained,
    readable_ref,
    replayed,
    with_rereads,
)
from engram_memory.services.ports import (
    Change,
    Clock,
    ConfirmationGate,
    GateConsumption,
    MemoryStore,
    MutationPlan,
    ReadRequest,
    ReadResult,
)

if TYPE_CHECKING:
    from engram_memory.contract.outputs import OutputModel
    from engram_memory.domain.context import InvocationContext, Scope, Tool
    from engram_memory.domain.journal import Actor, JournalEvent, JournalHead

C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)


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

    def consumption(self, now_ms: int) -> GateConsumption:
        """The approval this call's commit consumes; GateFailed when it names none."""
        return GateConsumption.of(self.ctx, self.tool, self.target,
                                  operation_digest(self.tool, self.arguments), now_ms)


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
        return cls(ctx.scope, idem, actor_of(ctx), AgentCall(ctx, tool, arguments))


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


class MutationPipeline:
    """Runs :class:`Mutation` attempts against the store, the gate and the clock."""

    def __init__(self, *, store: MemoryStore, gate: ConfirmationGate, clock: Clock,
                 sleep: Sleep, time_left: TimeLeft = no_deadline) -> None:
        self.store = store
        self.gate = gate
        self.clock = clock
        self.sleep = sleep
        # The invocation's remaining time: lost commits retry within it (commit_retry).
        self.time_left = time_left

    def run(self, call: MutationCall, new_attempt: Callable[[], Mutation[C]]) -> dict[str, Any]:
        """Run attempts (a fresh ``new_attempt()`` each) until one answers; the value."""
        return with_rereads(lambda: self._attempt(call, new_attempt()), self.sleep,
                            self.time_left)

    def _attempt(self, call: MutationCall, use: Mutation[C]) -> dict[str, Any]:
        idem = call.idem
        gate_first = self._approval_before_state(call, use)
        shared = ReadRequest(idempotency=(idem.principal, idem.key), head=True)
        found = self.store.read_together(call.scope, (
            replace(use.reads(), idempotency=shared.idempotency, head=True)
            if gate_first is None
            else replace(shared, confirmation_ref=readable_ref(gate_first.ctx))))
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
            stored = replayed(self.store.get_idempotency(call.scope, idem.principal, idem.key),
                              idem.tool, idem.intent)
            if stored is None:
                raise
            return _replay(use, stored)

    def _decide_and_commit(self, call: MutationCall, use: Mutation[C], found: ReadResult,
                           gate_first: AgentCall | None) -> dict[str, Any]:
        idem = call.idem
        now_ms = self.clock.now_ms()
        if gate_first is not None:
            # The approval before ANY read of the target: an unapproved call has done the
            # same work as for any other target when it answers gate_failed.
            approved_before_state(found.confirmation, gate_first.ctx, gate_first.tool,
                                  gate_first.arguments, now_ms)
            found = replace(self.store.read_together(call.scope, use.reads()),
                            idempotency=found.idempotency, head=found.head)
        checked = use.check(found, now_ms)
        consumption = self._consumption(call, now_ms)
        build = use.decide(checked, found, now_ms)

        def plan(head: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
            built = build(head)
            return MutationPlan(
                scope=call.scope, principal=idem.principal, idempotency_key=idem.key,
                tool=idem.tool, intent_digest=idem.intent, result=built.value, head=head,
                event=built.event, changes=built.changes, gate=consumption, at_ms=now_ms,
            ), built.value

        with self._commit_refusals(call, now_ms):
            return commit_fenced(self.store, call.scope, plan, self.sleep, found.head,
                                 self.time_left)

    def _consumption(self, call: MutationCall, now_ms: int) -> GateConsumption | None:
        agent = call.agent
        if agent is None or not agent.ctx.requires_confirmation(agent.tool):
            return None
        return agent.consumption(now_ms)

    @staticmethod
    def _approval_before_state(call: MutationCall, use: Mutation[C]) -> AgentCall | None:
        """The agent call whose approval is judged before its target (None: not such a
        tool)."""
        agent = call.agent
        return agent if agent is not None and use.state_behind_gate else None

    @contextmanager
    def _commit_refusals(self, call: MutationCall, now_ms: int) -> Iterator[None]:
        agent = call.agent
        if agent is None:
            yield
            return
        with gate_refusal_explained(self.gate, agent.ctx, agent.tool, agent.arguments,
                                    now_ms):
            yield


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
