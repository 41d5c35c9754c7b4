"""Deployment settings, read once per container from the environment.

The one reader of the environment: every variable's name is in ``engram_memory.env_names``
(the CDK stack sets them, the local service sets the same names); the composition root
(``engram_memory.composition``) reads ``Settings`` and nothing else. The local service's
own knobs (``LocalSettings``) and the operator's rebuild tool (``OperatorSettings``) read
the few names that exist before a deployment's settings do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_memory import env_names as n
from engram_memory.domain.context import Tool
from engram_memory.domain.fusion import DEPLOYED_LEXICAL_WEIGHT, DEPLOYED_RULE

DEFAULT_REGION = "us-east-1"
DEFAULT_CONFIRMATION_WINDOW_SECONDS = 30


def _flag(env: Mapping[str, str], name: str) -> bool:
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
    # The host's key set (JWKS JSON); when set it replaces host_public_key_pem (rotation).
    host_jwks: str = ""
    # The forget ledger table (docs/forget-ledger.md); a forget or withdrawal without one
    # is refused (STORE_UNAVAILABLE), never committed unledgered.
    ledger_table_name: str = ""
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
    # Semantic channel (docs/semantic.md): "" = none configured, "onnx" =
    # the in-deployment model, "bedrock-titan-v2" = the managed one (network).
    semantic_embedder: str = ""
    embedding_model_dir: str = ""  # "" = the layer's /opt/engram-models, else the repo's
    titan_dimension: int = 1024
    vector_bucket: str = ""
    vector_index: str = ""
    vector_index_local: bool = False  # local mode: exact in-process QueryVectors over moto
    # docs/semantic.md, "Fusion": convex (lexical weight in [0, 1)) or rrf; 0 = semantic alone.
    search_fusion: str = DEPLOYED_RULE
    search_fusion_lexical_weight: float = DEPLOYED_LEXICAL_WEIGHT
    search_fuse_lexical: bool = False  # the host lets `lexical` searches fuse too
    host_allows_network: bool = False  # the host lets a managed embedder be used
    state_machine_arn: str = ""
    confirmation_queue_url: str = ""
    confirmation_event_bus: str = ""  # "" = no host notifications (confirmation_notifier)
    # The approval window the deployment asks for; the gate never grants more than 30 s.
    confirmation_window_seconds: int = DEFAULT_CONFIRMATION_WINDOW_SECONDS
    # The function (or alias) serving each tool: the endpoint's (and host API's) invokes.
    function_names: Mapping[Tool, str] = field(default_factory=dict)
    # HTTP: extra Host values, browser Origins, and the RFC 9728 resource (docs/mcp.md).
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    resource_url: str = ""
    endpoint_url: str | None = None  # local mode: the moto server
    region: str = DEFAULT_REGION

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from the ``ENGRAM_*`` environment variables (env_names)."""
        e = os.environ if env is None else env
        return cls(**_deployment(e), **_policies(e), **_search(e), **_semantic(e),
                   **_gate_and_http(e), endpoint_url=e.get(n.AWS_ENDPOINT_URL) or None,
                   region=region_of(e))


def region_of(env: Mapping[str, str]) -> str:
    """``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else us-east-1."""
    return env.get(n.AWS_REGION, env.get(n.AWS_DEFAULT_REGION, DEFAULT_REGION))


def _deployment(e: Mapping[str, str]) -> dict[str, Any]:
    return {
        "tenant_id": e[n.TENANT_ID],
        "workspace_ids": _csv(e.get(n.WORKSPACE_IDS, "")),
        "table_name": e[n.TABLE_NAME],
        "key_table_name": e[n.KEY_TABLE_NAME],
        "projection_table_name": e[n.PROJECTION_TABLE_NAME],
        "ledger_table_name": e.get(n.LEDGER_TABLE_NAME, ""),
        "kms_key_id": e.get(n.KMS_KEY_ID, ""),
        "host_issuer": e.get(n.HOST_ISSUER, ""),
        "audience": e.get(n.AUDIENCE, ""),
        "host_public_key_pem": e.get(n.HOST_PUBLIC_KEY_PEM, ""),
        "host_jwks": e.get(n.HOST_JWKS, ""),
    }


def _policies(e: Mapping[str, str]) -> dict[str, Any]:
    return {
        "admission_policy_id": e.get(n.ADMISSION_POLICY_ID, "default"),
        "admission_policy_version": e.get(n.ADMISSION_POLICY_VERSION, "1"),
        "admission_mode": e.get(n.ADMISSION_MODE, "accept"),
        "retention_ceiling_ms": int(
            e.get(n.RETENTION_CEILING_MS, str(365 * 24 * 3600 * 1000))),
        "retain_allowed": _flag(e, n.RETAIN_ALLOWED),
        "reconciliation_families": _csv(e.get(n.RECONCILIATION_FAMILIES, "")),
        "purpose_scope": e.get(n.PURPOSE_SCOPE, "purpose") or "purpose",
        "redaction_allowlist": _csv(e.get(n.REDACTION_ALLOWLIST, "")),
    }


def _search(e: Mapping[str, str]) -> dict[str, Any]:
    return {
        "page_cursor_secret": e.get(n.PAGE_CURSOR_SECRET, ""),
        "page_cursor_secret_arn": e.get(n.PAGE_CURSOR_SECRET_ARN, ""),
        "search_postings_per_term": int(e.get(n.SEARCH_POSTINGS_PER_TERM, "0") or "0"),
        "search_tail_bound": int(e.get(n.SEARCH_TAIL_BOUND, "0") or "0"),
    }


def _semantic(e: Mapping[str, str]) -> dict[str, Any]:
    return {
        "semantic_embedder": e.get(n.SEMANTIC_EMBEDDER, ""),
        "embedding_model_dir": e.get(n.EMBEDDING_MODEL_DIR, ""),
        "titan_dimension": int(e.get(n.TITAN_DIMENSION, "1024") or "1024"),
        "vector_bucket": e.get(n.VECTOR_BUCKET, ""),
        "vector_index": e.get(n.VECTOR_INDEX, ""),
        "vector_index_local": _flag(e, n.VECTOR_INDEX_LOCAL),
        "search_fusion": e.get(n.SEARCH_FUSION, "") or DEPLOYED_RULE,
        "search_fusion_lexical_weight": float(
            e.get(n.SEARCH_FUSION_LEXICAL_WEIGHT, "") or DEPLOYED_LEXICAL_WEIGHT),
        "search_fuse_lexical": _flag(e, n.SEARCH_FUSE_LEXICAL),
        "host_allows_network": _flag(e, n.HOST_ALLOWS_NETWORK),
    }


def _gate_and_http(e: Mapping[str, str]) -> dict[str, Any]:
    names = {tool: e.get(n.function_name(tool), "") for tool in Tool}
    return {
        "state_machine_arn": e.get(n.STATE_MACHINE_ARN, ""),
        "confirmation_queue_url": e.get(n.CONFIRMATION_QUEUE_URL, ""),
        "confirmation_event_bus": e.get(n.CONFIRMATION_EVENT_BUS, ""),
        "confirmation_window_seconds": int(e.get(
            n.CONFIRMATION_WINDOW_SECONDS, str(DEFAULT_CONFIRMATION_WINDOW_SECONDS))),
        "function_names": {tool: name for tool, name in names.items() if name},
        "allowed_hosts": _csv(e.get(n.ALLOWED_HOSTS, "")),
        "allowed_origins": _csv(e.get(n.ALLOWED_ORIGINS, "")),
        "resource_url": e.get(n.RESOURCE_URL, ""),
    }


@dataclass(frozen=True, slots=True)
class LocalSettings:
    """The local service's own knobs, read before it sets the deployment's variables."""

    home: Path
    semantic_embedder: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LocalSettings:
        """``ENGRAM_LOCAL_HOME`` (default ~/.engram-memory), the embedder (default onnx)."""
        e = os.environ if env is None else env
        return cls(home=Path(e.get(n.LOCAL_HOME) or str(Path.home() / ".engram-memory")),
                   semantic_embedder=e.get(n.SEMANTIC_EMBEDDER, "onnx"))


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    """What ``python -m engram_memory.reproject`` needs: the main table and where it is."""

    table_name: str
    region: str | None  # None: boto3's own configuration decides
    endpoint_url: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        """``ENGRAM_TABLE_NAME`` (required), the region and the optional endpoint."""
        e = os.environ if env is None else env
        return cls(table_name=e[n.TABLE_NAME],
                   region=e.get(n.AWS_REGION) or e.get(n.AWS_DEFAULT_REGION) or None,
                   endpoint_url=e.get(n.AWS_ENDPOINT_URL) or None)
