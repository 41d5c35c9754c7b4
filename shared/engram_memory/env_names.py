"""The name of every environment variable the service reads, defined once.

The CDK stack (infra/) sets these on the functions, the local service sets the same names
for its in-process handlers, and ``engram_memory.settings`` is the only code that reads
them. tests/infra/test_environment_names.py holds the three to this one list.
"""

from __future__ import annotations

from typing import Final

from engram_memory.domain.context import Tool

# The deployment (every function).
TENANT_ID: Final = "ENGRAM_TENANT_ID"
WORKSPACE_IDS: Final = "ENGRAM_WORKSPACE_IDS"
TABLE_NAME: Final = "ENGRAM_TABLE_NAME"
KEY_TABLE_NAME: Final = "ENGRAM_KEY_TABLE_NAME"
PROJECTION_TABLE_NAME: Final = "ENGRAM_PROJECTION_TABLE_NAME"
# The forget ledger (docs/forget-ledger.md): forget and withdraw write it; a restore never.
LEDGER_TABLE_NAME: Final = "ENGRAM_LEDGER_TABLE_NAME"
KMS_KEY_ID: Final = "ENGRAM_KMS_KEY_ID"
# The host registration.
HOST_ISSUER: Final = "ENGRAM_HOST_ISSUER"
AUDIENCE: Final = "ENGRAM_AUDIENCE"
HOST_PUBLIC_KEY_PEM: Final = "ENGRAM_HOST_PUBLIC_KEY_PEM"
# The host's key set (a JWKS, each key with a kid): rotation without refused calls. When set,
# it is the trust anchor and HOST_PUBLIC_KEY_PEM is not read (docs/deploy.md).
HOST_JWKS: Final = "ENGRAM_HOST_JWKS"
# The host's policies.
ADMISSION_POLICY_ID: Final = "ENGRAM_ADMISSION_POLICY_ID"
ADMISSION_POLICY_VERSION: Final = "ENGRAM_ADMISSION_POLICY_VERSION"
ADMISSION_MODE: Final = "ENGRAM_ADMISSION_MODE"
RETENTION_CEILING_MS: Final = "ENGRAM_RETENTION_CEILING_MS"
RETAIN_ALLOWED: Final = "ENGRAM_RETAIN_ALLOWED"
RECONCILIATION_FAMILIES: Final = "ENGRAM_RECONCILIATION_FAMILIES"
PURPOSE_SCOPE: Final = "ENGRAM_PURPOSE_SCOPE"
REDACTION_ALLOWLIST: Final = "ENGRAM_REDACTION_ALLOWLIST"
# Search.
PAGE_CURSOR_SECRET: Final = "ENGRAM_PAGE_CURSOR_SECRET"  # noqa: S105 (a name)
PAGE_CURSOR_SECRET_ARN: Final = "ENGRAM_PAGE_CURSOR_SECRET_ARN"  # noqa: S105 (a name)
SEARCH_POSTINGS_PER_TERM: Final = "ENGRAM_SEARCH_POSTINGS_PER_TERM"
SEARCH_TAIL_BOUND: Final = "ENGRAM_SEARCH_TAIL_BOUND"
# The semantic channel (search, projector).
SEMANTIC_EMBEDDER: Final = "ENGRAM_SEMANTIC_EMBEDDER"
EMBEDDING_MODEL_DIR: Final = "ENGRAM_EMBEDDING_MODEL_DIR"
TITAN_DIMENSION: Final = "ENGRAM_TITAN_DIMENSION"
VECTOR_BUCKET: Final = "ENGRAM_VECTOR_BUCKET"
VECTOR_INDEX: Final = "ENGRAM_VECTOR_INDEX"
VECTOR_INDEX_LOCAL: Final = "ENGRAM_VECTOR_INDEX_LOCAL"
SEARCH_FUSION: Final = "ENGRAM_SEARCH_FUSION"
SEARCH_FUSION_LEXICAL_WEIGHT: Final = "ENGRAM_SEARCH_FUSION_LEXICAL_WEIGHT"
SEARCH_FUSE_LEXICAL: Final = "ENGRAM_SEARCH_FUSE_LEXICAL"
HOST_ALLOWS_NETWORK: Final = "ENGRAM_HOST_ALLOWS_NETWORK"
# The confirmation gate (host_api, confirmation_notifier).
STATE_MACHINE_ARN: Final = "ENGRAM_STATE_MACHINE_ARN"
CONFIRMATION_QUEUE_URL: Final = "ENGRAM_CONFIRMATION_QUEUE_URL"
CONFIRMATION_EVENT_BUS: Final = "ENGRAM_CONFIRMATION_EVENT_BUS"
CONFIRMATION_WINDOW_SECONDS: Final = "ENGRAM_CONFIRMATION_WINDOW_SECONDS"
# The HTTP surface (mcp_endpoint, host_api).
ALLOWED_HOSTS: Final = "ENGRAM_ALLOWED_HOSTS"
ALLOWED_ORIGINS: Final = "ENGRAM_ALLOWED_ORIGINS"
RESOURCE_URL: Final = "ENGRAM_RESOURCE_URL"
# ENGRAM_FUNCTION_<TOOL>: the function (or alias) that serves each tool (mcp_endpoint; the
# host API gets request_admission's only).
FUNCTION_PREFIX: Final = "ENGRAM_FUNCTION_"
# Where the AWS clients point (local mode: the embedded moto server) and the region.
AWS_ENDPOINT_URL: Final = "ENGRAM_AWS_ENDPOINT_URL"
AWS_REGION: Final = "AWS_REGION"
AWS_DEFAULT_REGION: Final = "AWS_DEFAULT_REGION"
# The local service only: its home directory (key, identity, snapshot).
LOCAL_HOME: Final = "ENGRAM_LOCAL_HOME"


def function_name(tool: Tool) -> str:
    """``ENGRAM_FUNCTION_<TOOL>``: the variable naming the function that serves ``tool``."""
    return FUNCTION_PREFIX + tool.value.upper()


FUNCTION_NAMES: Final = tuple(function_name(tool) for tool in Tool)
KNOWN: Final = frozenset(
    value for name, value in dict(globals()).items()
    if name.isupper() and isinstance(value, str) and value != FUNCTION_PREFIX
) | frozenset(FUNCTION_NAMES)
"""Every variable name ``Settings`` (and the local-only readers beside it) understands."""
