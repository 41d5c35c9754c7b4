"""Composition root of engram_memory_request_admission (and host adjudication)."""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.adapters.crypto.aead import AesGcmSealer
from engram_memory.composition.writes import gate, key_vault, policy
from engram_memory.services.admission import AdmissionService
from engram_memory.services.policy import AssertedEvidenceVerifier


@bootstrap.per_container
def service() -> AdmissionService:
    """The admission use case (and host adjudication)."""
    return AdmissionService(store=bootstrap.store(), key_vault=key_vault(),
                            sealer=AesGcmSealer(), policy=policy(),
                            verifier=bootstrap.port("verifier", AssertedEvidenceVerifier()),
                            gate=gate(), **bootstrap.common())
