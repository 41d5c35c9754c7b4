"""An adjudication that fails unexpectedly: a decision's outcome is unknown, an
inspection's is not (it writes nothing, so the reviewer must not be told it may have
decided something)."""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.domain.context import Scope
from engram_memory.runtime import run_adjudication

TENANT = "tenant-a"


def _event(decision: str) -> dict[str, Any]:
    return {"kind": "adjudication", "tenant_id": TENANT, "workspace_id": "ws-1",
            "candidate_id": "cand_abcdefghij", "decision": decision,
            "approver": "person:reviewer", "audit_id": "audit-1",
            "maintainer_token": "token"}


class _Broken:
    """The adjudicator's store fails with a raw exception (a driver bug, say)."""

    def __call__(self, scope: Scope, candidate_id: str, decision: str,
                 approver: str) -> dict[str, Any]:
        raise RuntimeError("boom")


@pytest.mark.parametrize(("decision", "code"), [
    ("accept", "MUTATION_OUTCOME_UNKNOWN"),
    ("reject", "MUTATION_OUTCOME_UNKNOWN"),
    ("inspect", "STORE_UNAVAILABLE"),
])
def test_an_unexpected_failure_names_an_unknown_outcome_only_for_a_decision(
    decision: str, code: str,
) -> None:
    envelope = run_adjudication(_event(decision), _Broken, lambda scope: True,
                                lambda token: TENANT)
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == code
    assert "boom" not in str(envelope)
