"""Drive the real tool handlers of one mocked tenant, and check every store invariant.

``World`` calls ``functions/<tool>/handler.py`` with realistic internal events (any scope),
records a human approval for a gated call the way the confirmation workflow leaves it, and
registers every piece of content it sends with the leak watch. ``check_invariants`` reads
the raw tables back and asserts what must hold after any sequence of calls, faults or
races (docs/reliability.md).
"""

from __future__ import annotations

import copy
import json
import os
import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.store import DynamoMemoryStore
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.journal import verify_chain
from engram_memory.domain.lifecycle import TRANSITIONS, Operation, State
from engram_memory.local.inprocess_invoker import (
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.projector_pump import drain

from tests.fixtures.contract_fixtures import PURPOSE_REF, VALID_T_MS, valid_capture_args
from tests.integration.conftest import AwsEnv
from tests.reliability import leakwatch
from tests.support.confirmations import approved_item
from tests.support.events import PRINCIPAL, TENANT_ID, WORKSPACE_ID, make_event

START_MS = VALID_T_MS + 30 * 24 * 3600 * 1000
HOME = Scope(TENANT_ID, WORKSPACE_ID)


@dataclass
class ManualClock:
    """A clock the test moves (every service shares it)."""

    now: int = START_MS

    def now_ms(self) -> int:
        """The current test time."""
        return self.now


def new_key(prefix: str) -> str:
    """A fresh idempotency key (≥ 16 ASCII characters)."""
    return f"{prefix}-{secrets.token_hex(8)}"


def capture_args(label: str, key: str | None = None) -> dict[str, Any]:
    """Distinct capture arguments; their texts and locators are registered as sensitive."""
    canary = f"canary {label} {secrets.token_hex(6)}"
    args = valid_capture_args(text=f"Context note {canary} about queue retries.",
                              decision_text=f"Decision {canary}: keep three retries.",
                              idempotency_key=key or new_key("rel-capture"))
    for citation in args["payload"]["citations"]:
        citation["locator"]["value"] += f"#{secrets.token_hex(5)}"
    leakwatch.register_arguments(args)
    return args


@dataclass
class World:
    """One mocked tenant, its handlers, its clock and its confirmation approvals."""

    aws: AwsEnv
    clock: ManualClock = field(default_factory=ManualClock)
    handlers: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The production gate (it reads the confirmation to tell a digest conflict apart):
        # its GetItem is one of the calls the fault tests break.
        bootstrap.override(clock=self.clock, sleep=lambda _s: None)

    def call(self, tool: Tool, args: Any, scope: Scope = HOME, **ctx: Any) -> dict[str, Any]:
        """Invoke the tool's Lambda handler as the endpoint would; the JSON envelope."""
        handler = self.handlers.get(tool.value)
        if handler is None:
            handler = load_handler(default_functions_dir(), tool.value)
            assert handler is not None
            self.handlers[tool.value] = handler
        ctx.setdefault("tenant_id", scope.tenant_id)
        ctx.setdefault("workspace_id", scope.workspace_id)
        event = make_event(tool, copy.deepcopy(args), **ctx)
        if scope == HOME:
            envelope = handler(event, LocalLambdaContext(function_name=tool.value))
        else:
            # The deployment serving that scope (one stack per tenant; here sharing scope A's
            # tables, so the store's scope keys alone must keep the two apart).
            workspaces = f"{os.environ.get('ENGRAM_WORKSPACE_IDS', '')},{scope.workspace_id}"
            with mock.patch.dict(os.environ, {"ENGRAM_TENANT_ID": scope.tenant_id,
                                              "ENGRAM_WORKSPACE_IDS": workspaces}):
                envelope = handler(event, LocalLambdaContext(function_name=tool.value))
        return dict(json.loads(json.dumps(envelope)))

    def approve(self, tool: Tool, args: dict[str, Any], scope: Scope = HOME,
                principal: str = PRINCIPAL) -> str:
        """Record an approved confirmation for exactly this call; its reference."""
        ref = "conf-" + secrets.token_hex(8)
        self.aws.dynamodb.put_item(
            TableName=self.aws.settings.table_name,
            Item=approved_item(scope, ref, tool, args, principal=principal,
                               now_ms=self.clock.now_ms()))
        return ref

    def gated(self, tool: Tool, args: dict[str, Any], scope: Scope = HOME) -> dict[str, Any]:
        """Approve then call a confirmation-gated tool."""
        ref = self.approve(tool, args, scope)
        return self.call(tool, args, scope, confirmation_ref=ref)

    def capture(self, label: str, scope: Scope = HOME) -> str:
        """A fresh pending candidate; its id."""
        envelope = self.call(Tool.CAPTURE, capture_args(label), scope)
        return str(ok(envelope)["candidate_id"])

    def admit(self, candidate_id: str, scope: Scope = HOME) -> str:
        """Admission of a pending candidate (the policy accepts); the record id."""
        envelope = self.call(Tool.REQUEST_ADMISSION, {
            "candidate_id": candidate_id, "idempotency_key": new_key("rel-admit")}, scope)
        outcome = ok(envelope)["outcome"]
        assert outcome["status"] == "accepted", outcome
        return str(outcome["record_id"])

    def record(self, label: str, scope: Scope = HOME) -> str:
        """A fresh accepted_current record; its id."""
        return self.admit(self.capture(label, scope), scope)

    def project(self) -> int:
        """Drain the main table's stream into the projector handler."""
        return drain(self.aws.settings)

    def store(self) -> DynamoMemoryStore:
        """The store adapter over the mocked tables (reads only in tests)."""
        s = self.aws.settings
        return DynamoMemoryStore(self.aws.dynamodb, s.table_name, s.key_table_name,
                                 s.ledger_table_name)


def ok(envelope: dict[str, Any]) -> dict[str, Any]:
    """The success value (fails with the error otherwise)."""
    assert envelope["ok"] is True, envelope.get("error")
    return dict(envelope["output"]["value"])


def error_of(envelope: dict[str, Any]) -> dict[str, Any]:
    """The error object of a failure envelope."""
    assert envelope["ok"] is False, envelope
    return dict(envelope["error"])


# --- invariants ---------------------------------------------------------------------------


def _items(world: World, table: str) -> list[dict[str, Any]]:
    return world.aws.scan(table)


def _sk(item: dict[str, Any]) -> str:
    return str(item["sk"]["S"])


def _pk(item: dict[str, Any]) -> str:
    return str(item["pk"]["S"])


@dataclass
class Census:
    """What the main and key tables hold, grouped per scope key."""

    candidates: dict[str, str] = field(default_factory=dict)  # candidate id → state
    blobs: Counter[str] = field(default_factory=Counter)  # candidate id → chunks
    keys: set[str] = field(default_factory=set)  # candidate ids with a wrapped key
    records: dict[str, str] = field(default_factory=dict)  # record id → state
    idempotency: list[dict[str, Any]] = field(default_factory=list)
    scopes: set[str] = field(default_factory=set)


def census(world: World) -> Census:
    """Classify every item of the main and key tables."""
    result = Census()
    s = world.aws.settings
    for item in _items(world, s.table_name):
        pk, sk = _pk(item), _sk(item)
        if pk.startswith("JOURNAL#"):
            result.scopes.add(pk.removeprefix("JOURNAL#"))
        elif pk.startswith("IDEM#"):
            result.idempotency.append(item)
        elif pk.startswith("SCOPE#") and sk.startswith("CAND#"):
            candidate = sk.removeprefix("CAND#").split("#", 1)[0]
            if "#BLOB#" in sk:
                result.blobs[candidate] += 1
            else:
                result.candidates[candidate] = str(item["state"]["S"])
        elif pk.startswith("SCOPE#") and sk.startswith("REC#") and "#PART#" not in sk:
            result.records[sk.removeprefix("REC#")] = str(item["state"]["S"])
    for item in _items(world, s.key_table_name):
        result.keys.add(_sk(item).removeprefix("CAND#"))
    return result


def _replay_states(events: list[Any]) -> dict[str, str]:
    """Each target's state after the journal, asserting every step is a legal move."""
    states: dict[str, str] = {}
    for event in events:
        body = event.body
        subject, op, to_state = body["subject"], body["operation"], body["to_state"]
        candidate, record = subject.get("candidate_id"), subject.get("record_id")
        if op == "capture":
            assert candidate not in states
            assert to_state == State.PENDING
            states[candidate] = to_state
            continue
        target = record if op == Operation.TOMBSTONE else candidate
        assert target is not None, body
        assert states.get(target) == body.get("from_state"), (op, states.get(target), body)
        expected = TRANSITIONS.get((State(body["from_state"]), Operation(op)))
        assert expected == to_state, body
        states[target] = to_state
        if op == Operation.ACCEPT:
            assert record is not None
            assert record not in states
            states[candidate] = "accepted"
            states[record] = to_state
    return states


def check_invariants(world: World) -> Census:
    """Assert every store invariant; the census for further, test-specific checks."""
    c = census(world)
    store = world.store()
    journaled = 0
    replayed: dict[str, str] = {}
    for scope_key in c.scopes:
        tenant, workspace = scope_key.split("#", 1)
        scope = Scope(tenant, workspace)
        events = store.journal_events(scope)
        head = verify_chain(events)  # gap-free cursors, every digest and link verifies
        assert head == store.journal_head(scope)
        journaled += len(events)
        replayed.update(_replay_states(events))
    # One commit = one idempotency item + one journal event: nothing half-applied.
    assert len(c.idempotency) == journaled
    for candidate, state in c.candidates.items():
        assert replayed.get(candidate) == state, (candidate, state)
        # A pending candidate keeps its key and ciphertext; any other state shredded both.
        pending = state == State.PENDING
        assert (candidate in c.keys) is pending, candidate
        assert (c.blobs[candidate] >= 1) is pending, candidate
    assert c.keys <= set(c.candidates), "orphan wrapped data key"
    assert set(c.blobs) <= set(c.candidates), "orphan ciphertext"
    for record, state in c.records.items():
        assert replayed.get(record) == state, (record, state)
    assert {t for t in replayed if t.startswith("mem_")} == set(c.records)
    return c


def projection_ids(world: World) -> set[str]:
    """Record ids the lexical projection holds as indexed."""
    found = set()
    for item in _items(world, world.aws.settings.projection_table_name):
        is_doc = _pk(item).startswith("DOC#") and "#T#" not in _sk(item)
        if is_doc and item.get("state", {}).get("S") == "indexed":
            found.add(_sk(item))
    return found


def idempotency_count(c: Census, key: str) -> int:
    """How many committed reservations use ``key`` (any principal, any scope)."""
    return sum(1 for item in c.idempotency if _sk(item) == f"KEY#{key}")


SEARCH_ARGS = {"query": "queue retries", "purpose_ref": PURPOSE_REF}
