"""Composition root of engram_memory_capture."""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.adapters.crypto.aead import AesGcmSealer
from engram_memory.composition.writes import gate, key_vault, policy
from engram_memory.services.capture import CaptureLimits, CaptureService


@bootstrap.per_container
def service() -> CaptureService:
    """The capture use case."""
    s = bootstrap.settings()
    limits = CaptureLimits(retain_allowed=s.retain_allowed,
                           retention_ceiling_ms=s.retention_ceiling_ms,
                           reconciliation_families=frozenset(s.reconciliation_families))
    return CaptureService(store=bootstrap.store(), key_vault=key_vault(),
                          sealer=AesGcmSealer(), policy=policy(), gate=gate(),
                          limits=limits, **bootstrap.common())
