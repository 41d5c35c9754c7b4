"""Host tokens for tests, signed with the host kit but with no claim rule checked.

Tests of the service's verifier must send what a careful host never would (a lifetime over
300 s, a foreign issuer, ``perm`` on the agent path): these helpers build a claim set as
asked, ``extra_claims`` last, and sign it with ``engram_memory_host.sign_claims``. A host
mints with ``engram_memory_host.mint_agent_token``, which refuses all of that.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from engram_memory_host import HostKey, default_kid, sign_claims
from engram_memory_host.keys import PrivateKey

DEFAULT_TTL_S = 300
ALL_CAPABILITIES = ("search", "get", "capture", "request_admission", "withdraw", "forget")


def generate_host_key() -> ed25519.Ed25519PrivateKey:
    """A fresh Ed25519 host signing key."""
    return ed25519.Ed25519PrivateKey.generate()


def _host_key(key: PrivateKey, kid: str | None = None) -> HostKey:
    return HostKey(key, kid or default_kid(key))


def private_pem(key: PrivateKey) -> bytes:
    """PKCS#8 PEM of a private key."""
    return _host_key(key).private_pem()


def public_pem(key: PrivateKey) -> str:
    """SubjectPublicKeyInfo PEM of the public half."""
    return _host_key(key).public_pem()


def public_jwk(key: PrivateKey, kid: str | None = None) -> dict[str, Any]:
    """The public JWK under ``kid`` (default: the kit's ``default_kid``)."""
    return _host_key(key, kid).public_jwk()


def host_jwks(*keys: PrivateKey) -> str:
    """The JWKS text trusting ``keys``, each under its default kid."""
    return json.dumps({"keys": [public_jwk(key) for key in keys]}, separators=(",", ":"))


key_id = default_kid


def load_or_create_host_key(path: Path) -> PrivateKey:
    """The key at ``path`` (the local service's ``host_key.pem``), created if absent."""
    return HostKey.load_or_create(path).private_key


def _times(now: float, ttl_s: int) -> dict[str, int]:
    iat = int(now)
    return {"iat": iat, "nbf": iat, "exp": iat + ttl_s}


def mint_agent_token(
    private_key: PrivateKey,
    *,
    issuer: str,
    audience: str,
    tenant: str,
    workspace: str,
    purpose_ref: str,
    capabilities: Iterable[str],
    now: float,
    principal: str = "local-user",
    agent_id: str = "local-agent",
    session: str | None = None,
    audit_id: str | None = None,
    confirm_required: Iterable[str] = (),
    confirmation_ref: str | None = None,
    ttl_s: int = DEFAULT_TTL_S,
    deadline_ms: int | None = None,
    extra_claims: dict[str, Any] | None = None,
    kid: str | None = None,
) -> str:
    """An agent token with exactly these claims (unchecked)."""
    claims: dict[str, Any] = {
        "iss": issuer, "aud": audience, "sub": principal, "jti": secrets.token_hex(16),
        **_times(now, ttl_s),
        "tenant": tenant, "workspace": workspace, "principal": principal,
        "agent_id": agent_id, "session": session or "sess-" + secrets.token_hex(8),
        "purpose_ref": purpose_ref, "audit_id": audit_id or "audit-" + secrets.token_hex(12),
        "deadline": deadline_ms if deadline_ms is not None else (int(now) + ttl_s) * 1000,
        "capabilities": list(capabilities), "confirm_required": list(confirm_required),
    }
    if confirmation_ref is not None:
        claims["confirmation_ref"] = confirmation_ref
    claims.update(extra_claims or {})
    return sign_claims(_host_key(private_key, kid), claims)


def mint_maintainer_token(
    private_key: PrivateKey,
    *,
    issuer: str,
    audience: str,
    tenant: str,
    now: float,
    subject: str = "local-operator",
    ttl_s: int = DEFAULT_TTL_S,
    perm: Iterable[str] = ("read", "maintain"),
    kid: str | None = None,
    workspaces: Iterable[str] | None = None,
    tenant_wide: bool = False,
) -> str:
    """A maintainer token with exactly these claims (one scope claim, unchecked)."""
    listed = None if workspaces is None else list(workspaces)
    claims: dict[str, Any] = {
        "iss": issuer, "aud": audience, "sub": subject, "jti": secrets.token_hex(16),
        **_times(now, ttl_s), "tenant": tenant, "perm": list(perm),
        **({"tenant_wide": True} if listed is None or tenant_wide else {"workspaces": listed}),
    }
    return sign_claims(_host_key(private_key, kid), claims)
