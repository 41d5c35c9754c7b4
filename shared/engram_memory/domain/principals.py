"""Principals the service acts as itself, never an agent's.

Idempotency reservations are keyed by principal (``IDEM#{tenant}#{workspace}#{principal}``).
The host adjudication and the expiry sweeper reserve deterministic keys under these
principals; an agent token naming one of them could take those keys first and block the
host's decision (``DIGEST_CONFLICT``) or a record's expiry for good. So the host-context
verifier refuses them in agent tokens (docs/mcp.md).
"""

from __future__ import annotations

from typing import Final

ADJUDICATION_PRINCIPAL: Final = "host:adjudication"
"""Owner of the host adjudication's ``adjudicate:{candidate_id}`` keys."""
SWEEPER_PRINCIPAL: Final = "system:expiry-sweeper"
"""Owner of the expiry sweeper's ``expiry:{record_id}`` keys."""
MIGRATION_PRINCIPAL: Final = "host:migration"
"""Owner of a migration's ``migration:mem0:{id}`` keys: its ledger (docs/migration-mem0.md)."""

INTERNAL_PRINCIPALS: Final = frozenset({ADJUDICATION_PRINCIPAL, SWEEPER_PRINCIPAL,
                                       MIGRATION_PRINCIPAL})


def is_internal_principal(principal: str) -> bool:
    """True for a principal reserved to the service itself."""
    return principal in INTERNAL_PRINCIPALS
