"""Candidates and records: ids, retention resolution, effective payload, record building.

The candidate id is derived from scope + principal + idempotency key, so concurrent
retries of one capture compute the same id and race on the same item. The record digest is
predicted at capture from scope + effective payload (nothing time-dependent), so the
``record_digest`` capture returns is the one admission produces, and ``record_id`` =
``canonical.record_id_for(record_digest)``. Consequence: one record per distinct effective
payload per scope (see docs/write_path.md for what a second admission returns).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from engram_memory.domain.canonical import (
    DigestKind,
    canonical_json,
    digest,
    id_from_digest,
    record_id_for,
)
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import InvalidSchema, Unauthorized
from engram_memory.domain.instant import format_instant, parse_instant
from engram_memory.domain.packet_bound import RECORD_BYTES_MAX

RETAIN = "retain"
MAKE_INELIGIBLE = "make-ineligible"
DEFAULT_TRUST_CLASS = "asserted"


def candidate_id_for(scope: Scope, principal: str, idempotency_key: str) -> str:
    """``cand_`` + base32 of a digest over scope, principal and idempotency key."""
    subject = {
        "tenant_id": scope.tenant_id,
        "workspace_id": scope.workspace_id,
        "principal": principal,
        "idempotency_key": idempotency_key,
    }
    return id_from_digest("cand_", digest(DigestKind.CANDIDATE, subject))


def resolve_retention(
    retention: Mapping[str, Any] | None,
    *,
    now_ms: int,
    retain_allowed: bool,
    ceiling_ms: int,
) -> dict[str, Any]:
    """The effective retention: default ``make-ineligible``; host limits enforced.

    ``retain`` without host permission, or ``expires_at`` beyond now + ceiling → Unauthorized;
    ``expires_at`` not strictly after now → InvalidSchema.
    """
    resolved: dict[str, Any] = {"derivative_rule": MAKE_INELIGIBLE}
    if retention is None:
        return resolved
    rule = retention.get("derivative_rule", MAKE_INELIGIBLE)
    if rule == RETAIN and not retain_allowed:
        raise Unauthorized
    resolved["derivative_rule"] = rule
    expires_at = retention.get("expires_at")
    if expires_at is not None:
        try:
            expires_ms = parse_instant(str(expires_at))
        except ValueError:
            raise InvalidSchema from None
        if expires_ms <= now_ms:
            raise InvalidSchema
        if expires_ms > now_ms + ceiling_ms:
            raise Unauthorized
        resolved["expires_at"] = expires_at
    return resolved


def check_reconciliation(payload: Mapping[str, Any], consented: Collection[str]) -> None:
    """Every reconciliation family must have host consent (else Unauthorized)."""
    reconciliation = payload.get("reconciliation")
    if reconciliation is None:
        return
    if any(family not in consented for family in reconciliation.get("family_refs", ())):
        raise Unauthorized


def effective_payload(payload: Mapping[str, Any], retention: Mapping[str, Any]) -> dict[str, Any]:
    """The payload as it will be recorded: the resolved retention replaces the requested."""
    effective = dict(payload)
    effective["retention"] = dict(retention)
    return effective


def payload_digest(effective: Mapping[str, Any]) -> str:
    """Digest of the effective payload (the tombstone guard compares these)."""
    return digest(DigestKind.PAYLOAD, dict(effective))


def record_digest_for(scope: Scope, effective: Mapping[str, Any]) -> str:
    """The record digest: scope + effective payload, predictable at capture."""
    subject = {
        "tenant_id": scope.tenant_id,
        "workspace_id": scope.workspace_id,
        "payload": dict(effective),
    }
    return digest(DigestKind.RECORD, subject)


def expires_at_ms(effective: Mapping[str, Any]) -> int | None:
    """The effective payload's expiry in epoch ms, if any."""
    expires_at = effective.get("retention", {}).get("expires_at")
    return None if expires_at is None else parse_instant(str(expires_at))


def derivative_rule(effective: Mapping[str, Any]) -> str:
    """The effective payload's derivative rule (``make-ineligible`` unless ``retain``)."""
    rule = effective.get("retention", {}).get("derivative_rule")
    return RETAIN if rule == RETAIN else MAKE_INELIGIBLE


def seal_material(effective: Mapping[str, Any], evidence: Mapping[str, Any]) -> bytes:
    """The plaintext that capture encrypts: canonical JSON of payload + evidence."""
    return canonical_json({"payload": dict(effective), "evidence": dict(evidence)})


def open_material(plaintext: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Inverse of :func:`seal_material`: (effective payload, evidence)."""
    material = json.loads(plaintext)
    return dict(material["payload"]), dict(material["evidence"])


def encryption_context(scope: Scope, candidate_id: str) -> dict[str, str]:
    """KMS encryption context and AEAD binding of one candidate's material."""
    return {
        "tenant": scope.tenant_id,
        "workspace": scope.workspace_id,
        "candidate_id": candidate_id,
    }


def check_record_bound(scope: Scope, effective: Mapping[str, Any], now_ms: int) -> None:
    """INVALID_SCHEMA when the record admission would build from ``effective`` exceeds
    RECORD_BYTES_MAX, so its packet could not be delivered at the largest packet size
    (domain/packet_bound.py; the reserve covers a host trust class other than the default)."""
    view = build_record(record_digest_for(scope, effective), effective,
                        trust_class=DEFAULT_TRUST_CLASS, recorded_at_ms=now_ms).view
    if len(canonical_json(dict(view))) > RECORD_BYTES_MAX:
        raise InvalidSchema


@dataclass(frozen=True, slots=True)
class Record:
    """An admitted record as stored: the agent-visible view plus its digest and id."""

    record_id: str
    record_digest: str
    view: Mapping[str, Any]


def build_record(
    record_digest: str,
    effective: Mapping[str, Any],
    *,
    trust_class: str,
    recorded_at_ms: int,
) -> Record:
    """The record admission stores (RecordView fields; the item's state is authoritative)."""
    record_id = record_id_for(record_digest)
    view: dict[str, Any] = {
        "record_id": record_id,
        "record_digest": record_digest,
        "state": "accepted_current",
        "purpose_ref": effective["purpose_ref"],
        "valid_time": dict(effective["valid_time"]),
        "components": list(effective["components"]),
        "primary_component_id": effective["primary_component_id"],
        "primary_event": dict(effective["primary_event"]),
        "citations": list(effective["citations"]),
        "retention": dict(effective["retention"]),
        "trust_class": trust_class,
        "recorded_at": format_instant(recorded_at_ms),
    }
    if "reconciliation" in effective:
        view["reconciliation"] = dict(effective["reconciliation"])
    return Record(record_id=record_id, record_digest=record_digest, view=view)
