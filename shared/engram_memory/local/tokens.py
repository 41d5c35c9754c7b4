"""Minting host tokens for local mode and tests (the host's side of the JWT contract).

In production the hosted agent platform mints these; locally the service generates an
Ed25519 host key in its data dir and this module signs tokens with it so a newcomer (or a
test) can play the host. The claim set is the one ``engram_memory.host_token``
verifies; see docs/mcp.md.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
DEFAULT_TTL_S = 300
ALL_CAPABILITIES = ("search", "get", "capture", "request_admission", "withdraw", "forget")


def generate_host_key() -> ed25519.Ed25519PrivateKey:
    """A fresh Ed25519 host signing key."""
    return ed25519.Ed25519PrivateKey.generate()


def private_pem(key: PrivateKey) -> bytes:
    """PKCS#8 PEM of a private key (unencrypted: local mode only, file mode 0600)."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_pem(key: PrivateKey) -> str:
    """SubjectPublicKeyInfo PEM of the key's public half (what the deployment trusts)."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def public_jwk(key: PrivateKey, kid: str | None = None) -> dict[str, Any]:
    """The key's public half as a JWK with its ``kid`` (by default ``key_id(key)``) and
    ``alg`` — one entry of the host key set a deployment trusts (``ENGRAM_HOST_JWKS``)."""
    public = key.public_key()
    if isinstance(public, ed25519.Ed25519PublicKey):
        jwk: dict[str, Any] = jwt.algorithms.OKPAlgorithm.to_jwk(public, as_dict=True)
    else:
        jwk = jwt.algorithms.ECAlgorithm.to_jwk(public, as_dict=True)
    return {**jwk, "kid": kid or key_id(key), "alg": _algorithm(key), "use": "sig"}


def host_jwks(*keys: PrivateKey) -> str:
    """The JWKS text (``{"keys": [...]}``) trusting ``keys``, each under its ``key_id``."""
    return json.dumps({"keys": [public_jwk(key) for key in keys]}, separators=(",", ":"))


def key_id(key: PrivateKey) -> str:
    """A stable ``kid`` for a key: the first 16 hex digits of the SHA-256 of its public
    SubjectPublicKeyInfo (DER), so the same key always gets the same id."""
    der = key.public_key().public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(der)
    return "host-" + digest.finalize().hex()[:16]


def load_or_create_host_key(path: Path) -> ed25519.Ed25519PrivateKey:
    """Load the host key at ``path``, creating it (0600) on first start."""
    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise ValueError("the local host key must be Ed25519")
        return key
    key = generate_host_key()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_bytes(private_pem(key))
    return key


def _algorithm(key: PrivateKey) -> str:
    return "EdDSA" if isinstance(key, ed25519.Ed25519PrivateKey) else "ES256"


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
    """A host-signed agent invocation token (the claims host_token verifies). The header's
    ``kid`` names the signing key (default ``key_id(private_key)``, the id ``host_jwks``
    publishes it under): a deployment with a key set selects the key by it."""
    claims: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "sub": principal,
        "jti": secrets.token_hex(16),
        **_times(now, ttl_s),
        "tenant": tenant,
        "workspace": workspace,
        "principal": principal,
        "agent_id": agent_id,
        "session": session or "sess-" + secrets.token_hex(8),
        "purpose_ref": purpose_ref,
        "audit_id": audit_id or "audit-" + secrets.token_hex(12),
        # The deadline bounds the whole turn; by default it ends with the token.
        "deadline": deadline_ms if deadline_ms is not None else (int(now) + ttl_s) * 1000,
        "capabilities": list(capabilities),
        "confirm_required": list(confirm_required),
    }
    if confirmation_ref is not None:
        claims["confirmation_ref"] = confirmation_ref
    claims.update(extra_claims or {})
    return jwt.encode(claims, private_key, algorithm=_algorithm(private_key),
                      headers={"kid": kid or key_id(private_key)})


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
    """A host-operator token carrying the maintenance permission (host routes only), scoped
    to ``workspaces`` or, explicitly, ``tenant_wide`` (exactly one); ``kid`` as for
    ``mint_agent_token``."""
    listed = None if workspaces is None else list(workspaces)
    if (listed is None) == (not tenant_wide):
        raise ValueError("a maintainer token names its workspaces or is tenant_wide, not both")
    if listed is not None and not listed:
        raise ValueError("a maintainer token's workspaces must not be empty")
    claims: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "sub": subject,
        "jti": secrets.token_hex(16),
        **_times(now, ttl_s),
        "tenant": tenant,
        "perm": list(perm),
        **({"tenant_wide": True} if listed is None else {"workspaces": listed}),
    }
    return jwt.encode(claims, private_key, algorithm=_algorithm(private_key),
                      headers={"kid": kid or key_id(private_key)})
