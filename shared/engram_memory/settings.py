"""Deployment settings, read once per container from the environment.

The CDK stack sets these on every function; the local service sets the same names.
Only the composition root (bootstrap) and the local service read them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _flag(env: dict[str, str], name: str) -> bool:
    return env.get(name, "false").lower() == "true"


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
    # Semantic channel (docs/search.md, "Semantic channel"): "" = none configured, "onnx" =
    # the in-deployment model, "bedrock-titan-v2" = the managed one (network).
    semantic_embedder: str = ""
    embedding_model_dir: str = ""  # "" = the layer's /opt/engram-models, else the repo's
    titan_dimension: int = 1024
    vector_bucket: str = ""
    vector_index: str = ""
    vector_index_local: bool = False  # local mode: exact in-process QueryVectors over moto
    search_fusion: str = "rrf"
    search_fusion_lexical_weight: float = 1.0  # 0 = semantic alone (a measuring setting)
    search_fuse_lexical: bool = False  # the host lets `lexical` searches fuse too
    host_allows_network: bool = False  # the host lets a managed embedder be used
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
            semantic_embedder=e.get("ENGRAM_SEMANTIC_EMBEDDER", ""),
            embedding_model_dir=e.get("ENGRAM_EMBEDDING_MODEL_DIR", ""),
            titan_dimension=int(e.get("ENGRAM_TITAN_DIMENSION", "1024") or "1024"),
            vector_bucket=e.get("ENGRAM_VECTOR_BUCKET", ""),
            vector_index=e.get("ENGRAM_VECTOR_INDEX", ""),
            vector_index_local=_flag(e, "ENGRAM_VECTOR_INDEX_LOCAL"),
            search_fusion=e.get("ENGRAM_SEARCH_FUSION", "rrf") or "rrf",
            search_fusion_lexical_weight=float(
                e.get("ENGRAM_SEARCH_FUSION_LEXICAL_WEIGHT", "1") or "1"),
            search_fuse_lexical=_flag(e, "ENGRAM_SEARCH_FUSE_LEXICAL"),
            host_allows_network=_flag(e, "ENGRAM_HOST_ALLOWS_NETWORK"),
            state_machine_arn=e.get("ENGRAM_STATE_MACHINE_ARN", ""),
            confirmation_queue_url=e.get("ENGRAM_CONFIRMATION_QUEUE_URL", ""),
            endpoint_url=e.get("ENGRAM_AWS_ENDPOINT_URL") or None,
            region=e.get("AWS_REGION", e.get("AWS_DEFAULT_REGION", "us-east-1")),
        )
