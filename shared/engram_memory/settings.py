"""Deployment settings, read once per container from the environment.

The CDK stack sets these on every function; the local service sets the same names.
Only the composition root (bootstrap) and the local service read them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _csv(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a function needs to know about its deployment."""

    tenant_id: str
    workspace_ids: tuple[str, ...]
    table_name: str
    key_table_name: str
    projection_table_name: str
    kms_key_id: str
    # Host registration: the JWT issuer, this deployment's audience and the host's public key.
    host_issuer: str
    audience: str
    host_public_key_pem: str
    # Admission policy configured by the host for this tenant.
    admission_policy_id: str = "default"
    admission_policy_version: str = "1"
    admission_mode: str = "accept"  # accept | reject | adjudicate
    # Retention: the host ceiling for expires_at (ms after capture) and whether `retain` is allowed.
    retention_ceiling_ms: int = 365 * 24 * 3600 * 1000
    retain_allowed: bool = False
    reconciliation_families: tuple[str, ...] = ()
    # Purpose limitation of reads (docs/contract.md): "purpose" = search and get see only
    # records captured under the purpose bound to the call; "workspace" widens reads to
    # every purpose of the workspace (a host decision).
    purpose_scope: str = "purpose"
    # Redaction: top-level record fields an agent may see (record_id always stays).
    redaction_allowlist: tuple[str, ...] = field(default_factory=tuple)
    page_cursor_secret: str = ""
    # In AWS the stack passes the Secrets Manager ARN instead; resolved once per container.
    page_cursor_secret_arn: str = ""
    # Search reads at most this many postings per query term, highest impact first (0 =
    # the ranking profile's default; docs/search.md).
    search_postings_per_term: int = 0
    # Journal events a search merges past the projection's watermark before it answers
    # PROJECTION_STALE (0 = services.search_tail.DEFAULT_TAIL_BOUND; docs/search.md).
    search_tail_bound: int = 0
    state_machine_arn: str = ""
    confirmation_queue_url: str = ""
    endpoint_url: str | None = None  # local mode: the moto server
    region: str = "us-east-1"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        """Build settings from ``ENGRAM_*`` environment variables."""
        e = dict(os.environ if env is None else env)
        return cls(
            tenant_id=e["ENGRAM_TENANT_ID"],
            workspace_ids=_csv(e.get("ENGRAM_WORKSPACE_IDS", "")),
            table_name=e["ENGRAM_TABLE_NAME"],
            key_table_name=e["ENGRAM_KEY_TABLE_NAME"],
            projection_table_name=e["ENGRAM_PROJECTION_TABLE_NAME"],
            kms_key_id=e.get("ENGRAM_KMS_KEY_ID", ""),
            host_issuer=e.get("ENGRAM_HOST_ISSUER", ""),
            audience=e.get("ENGRAM_AUDIENCE", ""),
            host_public_key_pem=e.get("ENGRAM_HOST_PUBLIC_KEY_PEM", ""),
            admission_policy_id=e.get("ENGRAM_ADMISSION_POLICY_ID", "default"),
            admission_policy_version=e.get("ENGRAM_ADMISSION_POLICY_VERSION", "1"),
            admission_mode=e.get("ENGRAM_ADMISSION_MODE", "accept"),
            retention_ceiling_ms=int(
                e.get("ENGRAM_RETENTION_CEILING_MS", str(365 * 24 * 3600 * 1000))
            ),
            retain_allowed=e.get("ENGRAM_RETAIN_ALLOWED", "false").lower() == "true",
            reconciliation_families=_csv(e.get("ENGRAM_RECONCILIATION_FAMILIES", "")),
            purpose_scope=e.get("ENGRAM_PURPOSE_SCOPE", "purpose") or "purpose",
            redaction_allowlist=_csv(e.get("ENGRAM_REDACTION_ALLOWLIST", "")),
            page_cursor_secret=e.get("ENGRAM_PAGE_CURSOR_SECRET", ""),
            page_cursor_secret_arn=e.get("ENGRAM_PAGE_CURSOR_SECRET_ARN", ""),
            search_postings_per_term=int(e.get("ENGRAM_SEARCH_POSTINGS_PER_TERM", "0") or "0"),
            search_tail_bound=int(e.get("ENGRAM_SEARCH_TAIL_BOUND", "0") or "0"),
            state_machine_arn=e.get("ENGRAM_STATE_MACHINE_ARN", ""),
            confirmation_queue_url=e.get("ENGRAM_CONFIRMATION_QUEUE_URL", ""),
            endpoint_url=e.get("ENGRAM_AWS_ENDPOINT_URL") or None,
            region=e.get("AWS_REGION", e.get("AWS_DEFAULT_REGION", "us-east-1")),
        )
