"""An adjudication that fails unexpectedly: a decision's outcome is unknown, an
inspection's is not (it writes nothing, so the reviewer must not be told it may have
decided something); and a successful inspection is not counted as a decision."""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.domain.context import Scope
from engram_memory.runtime import metrics, run_adjudication

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


class _Answering:
    """The adjudicator answers: a decision's outcome, or an inspection's payload."""

    def __call__(self, scope: Scope, candidate_id: str, decision: str,
                 approver: str) -> dict[str, Any]:
        return {"candidate_id": candidate_id, "decision": decision}


@pytest.mark.parametrize(("decision", "counted"), [
    ("accept", "adjudication.ok"),
    ("reject", "adjudication.ok"),
    ("inspect", "adjudication.inspect"),
])
def test_an_inspection_is_not_counted_as_a_decision(decision: str, counted: str) -> None:
    metrics.clear_metrics()
    try:
        envelope = run_adjudication(_event(decision), _Answering, lambda scope: True,
                                    lambda token: TENANT)
        assert envelope["ok"] is True
        assert set(metrics.metric_set) == {counted}
    finally:
        metrics.clear_metrics()
