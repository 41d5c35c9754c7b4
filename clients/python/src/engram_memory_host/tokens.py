"""Minting the two host tokens: the agent's per-turn token and the maintainer's."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

import jwt

from engram_memory_host import rules
from engram_memory_host.keys import HostKey, HostKeyRing

DEFAULT_TTL_S = rules.MAX_LIFETIME_S
Signer = HostKey | HostKeyRing


def _times(now: float | None, ttl_s: int) -> dict[str, int]:
    iat = int(time.time() if now is None else now)
    return {"iat": iat, "nbf": iat, "exp": iat + rules.lifetime(ttl_s)}


def _signing_key(signer: Signer) -> HostKey:
    return signer.signing if isinstance(signer, HostKeyRing) else signer


def sign_claims(signer: Signer, claims: Mapping[str, Any]) -> str:
    """Sign ``claims`` as they are, with no rule checked: the kit's tests use it to forge
    what the service must refuse. A host mints with the two functions below."""
    key = _signing_key(signer)
    return jwt.encode(dict(claims), key.private_key, algorithm=key.algorithm,
                      headers={"kid": key.kid})


def mint_agent_token(
    signer: Signer,
    *,
    issuer: str,
    audience: str,
    tenant: str,
    workspace: str,
    purpose_ref: str,
    capabilities: Iterable[str],
    principal: str,
    agent_id: str,
    session: str | None = None,
    audit_id: str | None = None,
    confirm_required: Iterable[str] = (),
    confirmation_ref: str | None = None,
    ttl_s: int = DEFAULT_TTL_S,
    deadline_ms: int | None = None,
    now: float | None = None,
) -> str:
    """A host-signed token for one agent turn, signed by ``signer`` (a key, or a ring's
    signing key); refuses (``ClaimRuleError``, rule named) any argument the service would
    refuse. ``deadline_ms`` (epoch milliseconds) defaults to the expiry."""
    times = _times(now, ttl_s)
    claims: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "sub": principal,
        "jti": secrets.token_hex(16),
        **times,
        "tenant": tenant,
        "workspace": workspace,
        "principal": principal,
        "agent_id": agent_id,
        "session": "sess-" + secrets.token_hex(8) if session is None else session,
        "purpose_ref": purpose_ref,
        "audit_id": "audit-" + secrets.token_hex(12) if audit_id is None else audit_id,
        # The deadline bounds the whole turn; by default it ends with the token.
        "deadline": times["exp"] * 1000 if deadline_ms is None else deadline_ms,
        "capabilities": rules.tools("capabilities", capabilities),
        "confirm_required": rules.tools("confirm_required", confirm_required),
    }
    if confirmation_ref is not None:
        claims["confirmation_ref"] = confirmation_ref
    rules.check_agent_claims(claims)
    return sign_claims(signer, claims)


def mint_maintainer_token(
    signer: Signer,
    *,
    issuer: str,
    audience: str,
    tenant: str,
    subject: str,
    workspaces: Iterable[str] | None = None,
    tenant_wide: bool = False,
    ttl_s: int = DEFAULT_TTL_S,
    now: float | None = None,
) -> str:
    """A host-operator token (``perm`` read+maintain) for the ``/host`` routes, scoped to
    ``workspaces=[...]`` or ``tenant_wide=True`` (exactly one)."""
    scope = rules.workspace_scope(workspaces, tenant_wide)
    claims: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "sub": subject,
        "jti": secrets.token_hex(16),
        **_times(now, ttl_s),
        "tenant": tenant,
        "perm": ["read", "maintain"],
    }
    if scope is None:
        claims["tenant_wide"] = True
    else:
        claims["workspaces"] = scope
    rules.check_maintainer_claims(claims)
    return sign_claims(signer, claims)
