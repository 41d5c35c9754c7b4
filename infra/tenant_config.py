"""The per-tenant deployment configuration: loaded from a JSON file, validated before synth.

An operator picks it with ``-c tenant=<id>`` (reads ``infra/config/<id>.json``) or
``-c config=<path>``; with neither, the example tenant is synthesized (CI, offline).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from engram_memory.host_token import MAX_HOST_KEYS, keys_from_jwks

from infra.constructs.retention import RETENTION_BY_DAYS
from infra.names import FUNCTIONS

CONFIG_DIR = Path(__file__).resolve().parent / "config"
DEFAULT_TENANT = "example-tenant"

# Tenant ids end up in resource names and DynamoDB keys: lowercase, no '#', short.
_TENANT_ID = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$")
_WORKSPACE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_MODES = ("accept", "reject", "adjudicate")
# A browser Origin exactly as sent: https://host[:port], or plain http on a loopback host.
_ORIGIN = re.compile(
    r"^(?:https://[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?"
    r"|http://(?:localhost|127\.0\.0\.1|\[::1\]))(?::[0-9]{1,5})?$")
_PURPOSE_SCOPES = ("purpose", "workspace")
_DAY_MS = 24 * 3600 * 1000


_EMBEDDERS = ("onnx", "bedrock-titan-v2", "none")


class ConfigError(ValueError):
    """The tenant configuration is missing or invalid (raised before any synthesis)."""


@dataclass(frozen=True, slots=True)
class TenantConfig:
    """Everything that differs between two tenant stacks."""

    tenant_id: str
    workspace_ids: tuple[str, ...]
    host_issuer: str
    audience: str
    host_public_key_pem: str
    # The host key set (JWKS entries, each with a kid): replaces host_public_key_pem when
    # given, so a key rotation refuses no call (docs/deploy.md, "Host key rotation").
    host_keys: tuple[dict[str, Any], ...] = ()
    admission_policy_id: str = "default"
    admission_policy_version: str = "1"
    admission_mode: str = "accept"
    retention_ceiling_days: int = 365
    retain_allowed: bool = False
    reconciliation_families: tuple[str, ...] = ()
    redaction_allowlist: tuple[str, ...] = ()
    # "purpose": reads see only the bound purpose's records; "workspace" widens them.
    purpose_scope: str = "purpose"
    log_retention_days: int = 30
    alarm_email: str | None = None
    api_rate_limit: int = 50
    api_burst_limit: int = 100
    reserved_concurrency: dict[str, int] = field(default_factory=dict)
    allowed_origins: tuple[str, ...] = ()
    # Lambda SnapStart on the request path (docs/performance.md, "SnapStart"): opt-in, its
    # snapshot cache is billed per GB-second for as long as the version exists.
    snap_start: bool = False
    account: str | None = None
    region: str | None = None
    # Semantic channel (docs/search.md): "onnx" (default, in the function), "bedrock-titan-v2"
    # (managed, network) or "none"; fusion of `lexical` searches; the host's network consent.
    semantic_embedder: str = "onnx"
    titan_dimension: int = 1024
    fuse_lexical: bool = False
    host_allows_network: bool = False

    @property
    def embedding_dimension(self) -> int:
        """The vector index's dimension: the embedder's output size."""
        return self.titan_dimension if self.semantic_embedder == "bedrock-titan-v2" else 384

    @property
    def retention_ceiling_ms(self) -> int:
        """The host ceiling for ``expires_at`` in milliseconds after capture."""
        return self.retention_ceiling_days * _DAY_MS

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TenantConfig:
        """Build and validate a configuration from its JSON object."""
        host = _section(raw, "host")
        policy = _section(raw, "admission_policy")
        retention = _section(raw, "retention")
        throttle = _section(raw, "api_throttle")
        semantic = _section(raw, "semantic")
        tenant_id = str(raw.get("tenant_id", ""))
        config = cls(
            tenant_id=tenant_id,
            workspace_ids=tuple(str(w) for w in raw.get("workspace_ids", ())),
            host_issuer=str(host.get("issuer", "")),
            audience=str(host.get("audience") or f"urn:engram-memory:{tenant_id}"),
            host_public_key_pem=str(host.get("public_key_pem", "")),
            host_keys=tuple(dict(k) if isinstance(k, dict) else {"invalid": k}
                            for k in host.get("keys") or ()),
            admission_policy_id=str(policy.get("id", "default")),
            admission_policy_version=str(policy.get("version", "1")),
            admission_mode=str(policy.get("mode", "accept")),
            retention_ceiling_days=int(retention.get("ceiling_days", 365)),
            retain_allowed=bool(retention.get("retain_allowed", False)),
            reconciliation_families=tuple(str(f) for f in raw.get("reconciliation_families", ())),
            redaction_allowlist=tuple(str(f) for f in raw.get("redaction_allowlist", ())),
            purpose_scope=str(raw.get("purpose_scope", "purpose")),
            log_retention_days=int(raw.get("log_retention_days", 30)),
            alarm_email=raw.get("alarm_email") or None,
            api_rate_limit=int(throttle.get("rate_limit", 50)),
            api_burst_limit=int(throttle.get("burst_limit", 100)),
            reserved_concurrency={str(k): int(v) for k, v in
                                  dict(raw.get("reserved_concurrency") or {}).items()},
            allowed_origins=tuple(str(o) for o in raw.get("allowed_origins") or ()),
            snap_start=bool(raw.get("snap_start", False)),
            account=raw.get("account") or None,
            region=raw.get("region") or None,
            semantic_embedder=str(semantic.get("embedder", "onnx")),
            titan_dimension=int(semantic.get("titan_dimension", 1024)),
            fuse_lexical=bool(semantic.get("fuse_lexical", False)),
            host_allows_network=bool(semantic.get("host_allows_network", False)),
        )
        config.validate()
        return config

    def validate(self) -> None:
        """Refuse a configuration that would deploy a broken or unsafe tenant."""
        problems = [*self._identity_problems(), *self._limit_problems()]
        if problems:
            raise ConfigError("; ".join(problems))

    def _identity_problems(self) -> list[str]:
        problems = []
        if not _TENANT_ID.match(self.tenant_id):
            problems.append("tenant_id must be 1-32 lowercase letters, digits or '-'")
        if not self.workspace_ids or not all(_WORKSPACE_ID.match(w) for w in self.workspace_ids):
            problems.append("workspace_ids must be a non-empty list of ids without '#'")
        if not self.host_issuer:
            problems.append("host.issuer is required")
        problems.extend(self._host_key_problems())
        if self.admission_mode not in _MODES:
            problems.append(f"admission_policy.mode must be one of {', '.join(_MODES)}")
        if self.purpose_scope not in _PURPOSE_SCOPES:
            problems.append(f"purpose_scope must be one of {', '.join(_PURPOSE_SCOPES)}")
        return problems

    def _host_key_problems(self) -> list[str]:
        if self.host_keys and self.host_public_key_pem:
            return ["give host.keys or host.public_key_pem, not both (a single PEM key is a "
                    "set of one: move it into host.keys with a kid)"]
        if self.host_keys:
            try:
                keys_from_jwks({"keys": list(self.host_keys)})
            except ValueError:
                return [f"host.keys must be 1 to {MAX_HOST_KEYS} Ed25519 or EC P-256 public "
                        "JWKs, each with a unique kid (alg EdDSA or ES256 when given)"]
            return []
        if not _is_supported_public_key(self.host_public_key_pem):
            return ["host.public_key_pem must be an Ed25519 or EC P-256 public key (PEM)"]
        return []

    @property
    def host_jwks(self) -> str:
        """The key set as the JWKS text the functions read (``""`` with a single PEM)."""
        if not self.host_keys:
            return ""
        return json.dumps({"keys": list(self.host_keys)}, separators=(",", ":"), sort_keys=True)

    def _limit_problems(self) -> list[str]:
        problems = []
        if self.retention_ceiling_days < 1:
            problems.append("retention.ceiling_days must be at least 1")
        if self.log_retention_days not in RETENTION_BY_DAYS:
            problems.append("log_retention_days must be a CloudWatch Logs retention value")
        if self.api_rate_limit < 1 or self.api_burst_limit < 1:
            problems.append("api_throttle limits must be positive")
        unknown = sorted(set(self.reserved_concurrency) - set(FUNCTIONS))
        if unknown:
            problems.append(f"reserved_concurrency names unknown functions: {unknown}")
        if any(v < 1 for v in self.reserved_concurrency.values()):
            problems.append("reserved_concurrency values must be at least 1")
        if not all(_ORIGIN.match(origin) for origin in self.allowed_origins):
            problems.append("allowed_origins must be origins like https://app.example.com "
                            "(no path, no wildcard; http only for localhost)")
        if self.semantic_embedder not in _EMBEDDERS:
            problems.append(f"semantic.embedder must be one of {', '.join(_EMBEDDERS)}")
        if self.titan_dimension not in (256, 512, 1024):
            problems.append("semantic.titan_dimension must be 256, 512 or 1024")
        return problems


def _section(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be an object")
    return value


def _is_supported_public_key(pem: str) -> bool:
    try:
        key = load_pem_public_key(pem.encode("ascii"))
    except (ValueError, TypeError, UnicodeEncodeError):
        return False
    if isinstance(key, ed25519.Ed25519PublicKey):
        return True
    return isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"


def load_config(*, tenant: str | None = None, config_path: str | None = None,
                config_dir: Path = CONFIG_DIR) -> TenantConfig:
    """The configuration named by ``-c config=<path>`` or ``-c tenant=<id>`` (else the example)."""
    if config_path:
        path = Path(config_path)
    else:
        name = tenant or DEFAULT_TENANT
        if not _TENANT_ID.match(name):
            raise ConfigError("tenant must be a tenant id")
        path = config_dir / f"{name}.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"no tenant configuration at {path}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"tenant configuration {path} is not valid JSON") from exc
    if not isinstance(raw, dict):
        raise ConfigError("tenant configuration must be a JSON object")
    return TenantConfig.from_dict(raw)
