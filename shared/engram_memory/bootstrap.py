"""Composition root of the write path: the only module (besides adapters) naming adapters.

Clients and services are built lazily, once per container, on first use; ``reset`` forgets
them (tests change the environment between cases) and ``override`` lets a test replace a
port (clock, gate, policy, verifier, sleep) with its own implementation.
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from engram_memory.adapters.clock import SystemClock
from engram_memory.adapters.crypto.aead import AesGcmSealer
from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationGate
from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
from engram_memory.adapters.dynamodb.record_reader import DynamoRecordReader
from engram_memory.adapters.dynamodb.scope_scan import DynamoScopes
from engram_memory.adapters.dynamodb.store import DynamoMemoryStore
from engram_memory.adapters.kms.key_vault import KmsKeyVault
from engram_memory.adapters.secrets import SecretsManagerSecrets
from engram_memory.domain.ranking import DEFAULT_POSTINGS_PER_TERM, RankingConfig
from engram_memory.services.admission import AdmissionService
from engram_memory.services.capture import CaptureLimits, CaptureService
from engram_memory.services.expiry import ExpirySweeper
from engram_memory.services.forget import ForgetService
from engram_memory.services.get import GetService
from engram_memory.services.paging import PageCursorCodec
from engram_memory.services.policy import AssertedEvidenceVerifier, SettingsAdmissionPolicy
from engram_memory.services.projection import ProjectionService
from engram_memory.services.redaction import Redactor
from engram_memory.services.reindex import ProjectionRebuild
from engram_memory.services.search import SearchService
from engram_memory.services.search_tail import DEFAULT_TAIL_BOUND
from engram_memory.services.semantic import SemanticChannel
from engram_memory.services.withdraw import WithdrawService
from engram_memory.settings import Settings

# Short timeouts: a Lambda has a deadline, and a stuck call must fail retriably. A
# TransactWriteItems the SDK resent after a lost answer may meet its own idempotency item:
# the store reports that as MUTATION_OUTCOME_UNKNOWN, never as a replay (docs/write_path.md).
CLIENT_CONFIG = Config(
    connect_timeout=2,
    read_timeout=5,
    retries={"mode": "standard", "max_attempts": 3},
)

_overrides: dict[str, Any] = {}


def override(**ports: Any) -> None:
    """Replace ports (``clock``, ``gate``, ``policy``, ``verifier``, ``sleep``) and re-wire."""
    _overrides.update(ports)
    _clear()


def reset() -> None:
    """Forget every cached client, service and override."""
    _overrides.clear()
    _clear()


def _clear() -> None:
    for factory in (settings, dynamodb_client, kms_client, store, capture_service,
                    admission_service, withdraw_service, forget_service,
                    search_service, get_service, projection_service, expiry_service):
        factory.cache_clear()
    page_cursor_secret.cache_clear()
    semantic_channel.cache_clear()


@cache
def settings() -> Settings:
    """Deployment settings, read once from the environment."""
    return Settings.from_env()


@cache
def dynamodb_client() -> Any:
    """The container's DynamoDB client."""
    s = settings()
    return boto3.client("dynamodb", region_name=s.region, endpoint_url=s.endpoint_url,
                        config=CLIENT_CONFIG)


@cache
def kms_client() -> Any:
    """The container's KMS client."""
    s = settings()
    return boto3.client("kms", region_name=s.region, endpoint_url=s.endpoint_url,
                        config=CLIENT_CONFIG)


@cache
def store() -> DynamoMemoryStore:
    """The canonical store (main + key tables)."""
    s = settings()
    return DynamoMemoryStore(dynamodb_client(), s.table_name, s.key_table_name)


def _port(name: str, default: Any) -> Any:
    return _overrides.get(name, default)


def _gate() -> Any:
    # The Step Functions confirmation gate (docs/confirmation.md): a gated tool's commit
    # consumes the human approval named by the host context, or fails with gate_failed.
    return _port("gate", DynamoConfirmationGate(settings().table_name,
                                                  dynamodb_client()))


def _policy() -> Any:
    s = settings()
    return _port("policy", SettingsAdmissionPolicy(s.admission_policy_id,
                                                   s.admission_policy_version,
                                                   s.admission_mode))


def _common() -> dict[str, Any]:
    return {"clock": _port("clock", SystemClock()), "sleep": _port("sleep", time.sleep)}


@cache
def capture_service() -> CaptureService:
    """The capture use case."""
    s = settings()
    limits = CaptureLimits(retain_allowed=s.retain_allowed,
                           retention_ceiling_ms=s.retention_ceiling_ms,
                           reconciliation_families=frozenset(s.reconciliation_families))
    return CaptureService(store=store(), key_vault=KmsKeyVault(kms_client(), s.kms_key_id),
                          sealer=AesGcmSealer(), policy=_policy(), gate=_gate(),
                          limits=limits, **_common())


@cache
def admission_service() -> AdmissionService:
    """The admission use case (and host adjudication)."""
    s = settings()
    return AdmissionService(store=store(), key_vault=KmsKeyVault(kms_client(), s.kms_key_id),
                            sealer=AesGcmSealer(), policy=_policy(),
                            verifier=_port("verifier", AssertedEvidenceVerifier()),
                            gate=_gate(), **_common())


@cache
def withdraw_service() -> WithdrawService:
    """The withdraw use case."""
    return WithdrawService(store=store(), gate=_gate(), **_common())


@cache
def forget_service() -> ForgetService:
    """The forget use case."""
    return ForgetService(store=store(), gate=_gate(), **_common())


@cache
def expiry_service() -> ExpirySweeper:
    """The retention expiry sweeper (docs/expiry.md)."""
    return ExpirySweeper(store=store(), **_common())


# --- read path (search, get, projector; docs/search.md) ---------------------------------


def _record_reader() -> DynamoRecordReader:
    return DynamoRecordReader(dynamodb_client(), settings().table_name)


def _projection_store() -> DynamoProjectionStore:
    return DynamoProjectionStore(dynamodb_client(), settings().projection_table_name)


def _aws_client(service: str) -> Any:
    s = settings()
    return boto3.client(service, region_name=s.region,  # type: ignore[call-overload]
                        endpoint_url=s.endpoint_url, config=CLIENT_CONFIG)


@cache
def semantic_channel() -> SemanticChannel | None:
    """The semantic channel (embedder + vector index) when configured; docs/search.md."""
    if "semantic" in _overrides:
        return _overrides["semantic"]  # type: ignore[no-any-return]
    from engram_memory import semantic_wiring

    return semantic_wiring.semantic_channel(settings(), _aws_client)


@cache
def search_service() -> SearchService:
    """The search use case: lexical, fused with the semantic channel when configured."""
    from engram_memory import semantic_wiring

    s = settings()
    config = RankingConfig(postings_per_term=s.search_postings_per_term or
                           DEFAULT_POSTINGS_PER_TERM)
    return SearchService(_record_reader(), _projection_store(), _port("clock", SystemClock()),
                         PageCursorCodec(page_cursor_secret()), Redactor(s.redaction_allowlist),
                         config, semantic_wiring.channel_settings(s, semantic_channel()),
                         tail_bound=s.search_tail_bound or DEFAULT_TAIL_BOUND,
                         purpose_scope=s.purpose_scope)


@cache
def page_cursor_secret() -> str:
    """The page-cursor secret: from the environment, else fetched once by its ARN.

    A failed fetch raises (a contract error) and is not cached, so the next invocation
    retries it; with neither set, paging is refused as CAPABILITY_UNAVAILABLE.
    """
    s = settings()
    if s.page_cursor_secret or not s.page_cursor_secret_arn:
        return s.page_cursor_secret
    client = boto3.client("secretsmanager", region_name=s.region,
                          endpoint_url=s.endpoint_url, config=CLIENT_CONFIG)
    return SecretsManagerSecrets(client).secret_string(s.page_cursor_secret_arn)


@cache
def get_service() -> GetService:
    """The get use case."""
    s = settings()
    return GetService(_record_reader(), _port("clock", SystemClock()),
                      Redactor(s.redaction_allowlist), purpose_scope=s.purpose_scope)


@cache
def projection_service() -> ProjectionService:
    """The projector's use case."""
    return ProjectionService(_record_reader(), _projection_store(), semantic_channel())


def projection_rebuild() -> ProjectionRebuild:
    """Re-index every record into the current projection generation (an operator's tool)."""
    return ProjectionRebuild(DynamoScopes(dynamodb_client(), settings().table_name),
                             projection_service())
