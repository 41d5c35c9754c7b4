"""Isolation: every id of scope A, tried from scope B through every tool, is NOT_FOUND.

(A withdraw or forget nobody approved answers gate_failed for every target, before any
state is read; with an approval in scope B the answer is NOT_FOUND.)

Scopes: A = (tenant-a, ws-main); B = another workspace of the same tenant; C = another
tenant (the deployment is per tenant, so the MCP endpoint refuses a foreign tenant's token
before any tool runs — tests/reliability/test_hostile_input.py; here the tool Lambdas are
called directly with C's context to prove the store itself keys everything by scope). Each
foreign answer must equal, byte for byte but for ``auditId``, the answer for an id that
was never issued anywhere.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from engram_memory.domain.context import Scope, Tool

from tests.fixtures.contract_fixtures import PURPOSE_REF
from tests.reliability.support import (
    HOME,
    World,
    capture_args,
    check_invariants,
    new_key,
    ok,
)

OTHER_WORKSPACE = Scope(HOME.tenant_id, "ws-other")
OTHER_TENANT = Scope("tenant-b", HOME.workspace_id)
FOREIGN = (OTHER_WORKSPACE, OTHER_TENANT)
GATED = (Tool.WITHDRAW, Tool.FORGET)
_B32 = "abcdefghijklmnopqrstuvwxyz234567"


def unknown_id(prefix: str) -> str:
    """A well-formed id nobody issued (same shape as real ones)."""
    return prefix + "".join(secrets.choice(_B32) for _ in range(52))


def _args(tool: Tool, target: str) -> dict[str, Any]:
    if tool is Tool.GET:
        return {"record_id": target, "purpose_ref": PURPOSE_REF}
    if tool is Tool.REQUEST_ADMISSION:
        return {"candidate_id": target, "idempotency_key": new_key("iso-adm")}
    field = "record_id" if tool is Tool.FORGET else "candidate_id"
    return {field: target, "idempotency_key": new_key(f"iso-{tool.value}"),
            "reason_ref": "reason:isolation"}


def without_audit(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope minus its per-call auditId."""
    return {k: v for k, v in envelope.items() if k != "auditId"}


def attempt(world: World, tool: Tool, target: str, scope: Scope, approved: bool
            ) -> dict[str, Any]:
    """One call from ``scope``; for gated tools optionally with a host approval there."""
    args = _args(tool, target)
    ctx: dict[str, Any] = {"audit_id": "audit-" + secrets.token_hex(6)}
    if approved:
        ctx["confirmation_ref"] = world.approve(tool, args, scope)
    return world.call(tool, args, scope, **ctx)


@pytest.fixture
def scope_a(world: World) -> dict[str, str]:
    """Scope A's ids: a pending candidate, an accepted record and its candidate."""
    pending = world.capture("isolation pending")
    accepted_candidate = world.capture("isolation accepted")
    record = world.admit(accepted_candidate)
    world.project()
    return {"pending": pending, "accepted_candidate": accepted_candidate, "record": record}


TARGETED = [
    (Tool.GET, "record", "mem_", False),
    (Tool.FORGET, "record", "mem_", False),
    (Tool.FORGET, "record", "mem_", True),
    (Tool.REQUEST_ADMISSION, "pending", "cand_", False),
    (Tool.REQUEST_ADMISSION, "accepted_candidate", "cand_", False),
    (Tool.WITHDRAW, "pending", "cand_", False),
    (Tool.WITHDRAW, "pending", "cand_", True),
]


@pytest.mark.parametrize("scope", FOREIGN, ids=["other-workspace", "other-tenant"])
def test_every_id_of_another_scope_answers_exactly_like_an_unknown_id(
    world: World, scope_a: dict[str, str], scope: Scope
) -> None:
    before = check_invariants(world)
    for tool, name, prefix, approved in TARGETED:
        foreign = attempt(world, tool, scope_a[name], scope, approved)
        unknown = attempt(world, tool, unknown_id(prefix), scope, approved)
        assert foreign["ok"] is False, (tool, name, foreign)
        # A gated call nobody approved learns nothing of any target: gate_failed first.
        expected = "gate_failed" if tool in GATED and not approved else "NOT_FOUND"
        assert foreign["error"]["code"] == expected, (tool, name, approved, foreign)
        assert without_audit(foreign) == without_audit(unknown), (tool, name, approved)
    after = check_invariants(world)
    assert (after.candidates, after.records, after.keys) == (
        before.candidates, before.records, before.keys)
    # Scope A still sees and owns its ids.
    assert ok(world.call(Tool.GET, _args(Tool.GET, scope_a["record"])))["record"]


@pytest.mark.parametrize("scope", FOREIGN, ids=["other-workspace", "other-tenant"])
def test_search_from_another_scope_finds_nothing_of_scope_a(
    world: World, scope_a: dict[str, str], scope: Scope
) -> None:
    query = {"query": "isolation accepted queue retries", "purpose_ref": PURPOSE_REF}
    mine = ok(world.call(Tool.SEARCH, query))
    assert scope_a["record"] in [p["record"]["record_id"] for p in mine["records"]]
    foreign = ok(world.call(Tool.SEARCH, query, scope))
    assert foreign["records"] == []
    empty = Scope(HOME.tenant_id, "ws-never-used")
    assert foreign["records"] == ok(world.call(Tool.SEARCH, query, empty))["records"]


@pytest.mark.parametrize("scope", FOREIGN, ids=["other-workspace", "other-tenant"])
def test_an_idempotency_key_of_another_scope_is_a_fresh_key_here(
    world: World, scope: Scope
) -> None:
    key = new_key("iso-shared-key")
    ok(world.call(Tool.CAPTURE, capture_args("scope a content", key)))
    # Same key, other content, other scope: neither a replay nor a DIGEST_CONFLICT, which
    # would reveal that scope A used the key.
    theirs = ok(world.call(Tool.CAPTURE, capture_args("scope b content", key), scope))
    assert theirs["status"] == "committed_pending"
    check_invariants(world)


OTHER_PURPOSE = "purpose:another-team"


def _as_purpose(args: dict[str, Any], purpose: str) -> dict[str, Any]:
    return {**args, "purpose_ref": purpose}


def test_a_record_of_another_purpose_answers_exactly_like_an_unknown_id(
    world: World, scope_a: dict[str, str]
) -> None:
    # Issue 15 item 10: a record captured under purpose A was returned to an agent bound
    # to purpose B in the same workspace.
    seen_by_b = world.call(Tool.GET, _as_purpose(_args(Tool.GET, scope_a["record"]),
                                                 OTHER_PURPOSE), purpose_ref=OTHER_PURPOSE)
    unknown = world.call(Tool.GET, _as_purpose(_args(Tool.GET, unknown_id("mem_")),
                                               OTHER_PURPOSE), purpose_ref=OTHER_PURPOSE)
    assert seen_by_b["error"]["code"] == "NOT_FOUND"
    assert without_audit(seen_by_b) == without_audit(unknown)
    query = {"query": "isolation accepted queue retries", "purpose_ref": OTHER_PURPOSE}
    assert ok(world.call(Tool.SEARCH, query, purpose_ref=OTHER_PURPOSE))["records"] == []
    # Purpose A still sees its record.
    assert ok(world.call(Tool.GET, _args(Tool.GET, scope_a["record"])))["record"]


def test_the_host_can_widen_reads_to_every_purpose_of_the_workspace(
    world: World, scope_a: dict[str, str]
) -> None:
    world.aws.configure(ENGRAM_PURPOSE_SCOPE="workspace")
    got = ok(world.call(Tool.GET, _as_purpose(_args(Tool.GET, scope_a["record"]),
                                              OTHER_PURPOSE), purpose_ref=OTHER_PURPOSE))
    assert got["record"]["record_id"] == scope_a["record"]
    query = {"query": "isolation accepted queue retries", "purpose_ref": OTHER_PURPOSE}
    found = ok(world.call(Tool.SEARCH, query, purpose_ref=OTHER_PURPOSE))["records"]
    assert scope_a["record"] in [p["record"]["record_id"] for p in found]
