"""Receipt digests, each recomputable from the fields returned (or stored) beside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram_memory.domain.canonical import DigestKind, digest


def capture_transaction_digest(candidate_id: str, record_digest: str, cursor: str) -> str:
    """Over the capture value's other fields except ``status`` (a replay keeps it)."""
    return digest(
        DigestKind.TRANSACTION_RECEIPT,
        {"candidate_id": candidate_id, "record_digest": record_digest, "cursor": cursor},
    )


def decision_receipt(
    *,
    candidate_id: str,
    status: str,
    policy_id: str,
    policy_version: str,
    bound_policy_version: str,
    trust_class: str | None,
    record_id: str | None,
) -> dict[str, Any]:
    """The admission decision's receipt body (stored on the candidate item)."""
    body: dict[str, Any] = {
        "candidate_id": candidate_id,
        "status": status,
        "policy_id": policy_id,
        "policy_version": policy_version,
        "bound_policy_version": bound_policy_version,
    }
    if trust_class is not None:
        body["trust_class"] = trust_class
    if record_id is not None:
        body["record_id"] = record_id
    return body


def decision_receipt_digest(receipt: Mapping[str, Any]) -> str:
    """Digest of a :func:`decision_receipt` body."""
    return digest(DigestKind.DECISION_RECEIPT, dict(receipt))


def outcome_transaction_digest(outcome: Mapping[str, Any]) -> str:
    """Over an admission outcome's fields except itself."""
    subject = {k: v for k, v in outcome.items() if k != "transaction_receipt_digest"}
    return digest(DigestKind.TRANSACTION_RECEIPT, subject)


def authorization_receipt(
    *,
    tool: str,
    target: str,
    principal: str,
    agent_id: str,
    session_id: str,
    operation_digest: str,
    confirmation_ref: str | None,
) -> dict[str, Any]:
    """What authorized a gated move: the host identities, the capability and confirmation."""
    body: dict[str, Any] = {
        "tool": tool,
        "target": target,
        "principal": principal,
        "agent_id": agent_id,
        "session_id": session_id,
        "operation_digest": operation_digest,
    }
    if confirmation_ref is not None:
        body["confirmation_ref"] = confirmation_ref
    return body


def authorization_receipt_digest(receipt: Mapping[str, Any]) -> str:
    """Digest of an :func:`authorization_receipt` body."""
    return digest(DigestKind.AUTHORIZATION_RECEIPT, dict(receipt))


def transition_transaction_digest(receipt: Mapping[str, Any]) -> str:
    """Over a withdraw/forget receipt's fields except itself."""
    subject = {k: v for k, v in receipt.items() if k != "transaction_receipt_digest"}
    return digest(DigestKind.TRANSACTION_RECEIPT, subject)
