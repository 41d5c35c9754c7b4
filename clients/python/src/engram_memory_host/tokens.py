"""Minting the two host tokens: the agent's per-turn token and the maintainer's."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable

import jwt

from engram_memory_host import rules
from engram_memory_host.keys import HostKey

DEFAULT_TTL_S = rules.MAX_LIFETIME_S


def _times(now: float | None, ttl_s: int) -> dict[str, int]:
    iat = int(time.time() if now is None else now)
    return {"iat": iat, "nbf": iat, "exp": iat + rules.lifetime(ttl_s)}


def _sign(key: HostKey, claims: dict[str, object]) -> str:
    return jwt.encode(claims, key.private_key, algorithm=key.algorithm,
                      headers={"kid": key.kid})


def mint_agent_token(
    key: HostKey,
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
    """A host-signed token for one agent turn; refuses (``ClaimRuleError``, rule named)
    any argument the service would refuse. ``deadline_ms`` defaults to the expiry."""
    times = _times(now, ttl_s)
    claims: dict[str, object] = {
        "iss": rules.ref("issuer", issuer),
        "aud": rules.ref("audience", audience),
        "sub": rules.principal(principal),
        "jti": secrets.token_hex(16),
        **times,
        "tenant": rules.scope_id("tenant", tenant),
        "workspace": rules.scope_id("workspace", workspace),
        "principal": principal,
        "agent_id": rules.ref("agent_id", agent_id),
        "session": rules.ref("session", session or "sess-" + secrets.token_hex(8)),
        "purpose_ref": rules.ref("purpose_ref", purpose_ref),
        "audit_id": rules.ref("audit_id", audit_id or "audit-" + secrets.token_hex(12)),
        "deadline": rules.deadline(times["exp"] * 1000 if deadline_ms is None else deadline_ms),
        "capabilities": rules.tools("capabilities", capabilities),
        "confirm_required": rules.tools("confirm_required", confirm_required),
    }
    if confirmation_ref is not None:
        claims["confirmation_ref"] = rules.ref("confirmation_ref", confirmation_ref)
    return _sign(key, claims)


def mint_maintainer_token(
    key: HostKey,
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
    claims: dict[str, object] = {
        "iss": rules.ref("issuer", issuer),
        "aud": rules.ref("audience", audience),
        "sub": rules.ref("subject", subject),
        "jti": secrets.token_hex(16),
        **_times(now, ttl_s),
        "tenant": rules.scope_id("tenant", tenant),
        "perm": ["read", "maintain"],
    }
    if scope is None:
        claims["tenant_wide"] = True
    else:
        claims["workspaces"] = scope
    return _sign(key, claims)
