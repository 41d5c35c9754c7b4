"""The host invocation context: every reason a token is refused, and what a good one binds."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from engram_memory.domain.context import Tool
from engram_memory.domain.principals import INTERNAL_PRINCIPALS
from engram_memory.host_token import (
    HostTokenVerifier,
    UntrustedContext,
    bearer_token,
    verify_agent_token,
    verify_maintainer_token,
)
from engram_memory.local.tokens import mint_agent_token, mint_maintainer_token, public_pem

NOW = 1_800_000_000.0
ISS = "https://host.example"
AUD = "engram-test"
KEY = ed25519.Ed25519PrivateKey.generate()


def verifier(
    key: Any = KEY, *, now: float = NOW, workspaces: tuple[str, ...] = ("ws1",)
) -> HostTokenVerifier:
    return HostTokenVerifier.from_pem(
        public_pem(key), issuer=ISS, audience=AUD, tenant_id="t1",
        workspace_ids=workspaces, clock=lambda: now,
    )


def token(key: Any = KEY, **overrides: Any) -> str:
    kwargs: dict[str, Any] = {
        "issuer": ISS, "audience": AUD, "tenant": "t1", "workspace": "ws1",
        "purpose_ref": "purpose:test", "capabilities": ["search", "get"], "now": NOW,
        "principal": "alice", "audit_id": "audit-1",
    }
    kwargs.update(overrides)
    return mint_agent_token(key, **kwargs)


def raw_token(claims: dict[str, Any], key: Any = KEY, alg: str = "EdDSA") -> str:
    return jwt.encode(claims, key, algorithm=alg)


def good_claims() -> dict[str, Any]:
    return jwt.decode(token(), options={"verify_signature": False})


def refused(tok: str, v: HostTokenVerifier | None = None) -> None:
    with pytest.raises(UntrustedContext) as info:
        verify_agent_token(tok, v or verifier())
    assert str(info.value) == "Trusted invocation context unavailable"


def test_a_valid_token_binds_the_scope_actor_purpose_and_capabilities() -> None:
    ctx = verify_agent_token(
        token(
            confirm_required=["capture"], confirmation_ref="conf-1", deadline_ms=1_800_000_100_000
        ),
        verifier(),
    )
    assert ctx.scope.tenant_id == "t1"
    assert ctx.scope.workspace_id == "ws1"
    assert ctx.principal == "alice"
    assert ctx.purpose_ref == "purpose:test"
    assert ctx.capabilities == frozenset({Tool.SEARCH, Tool.GET})
    assert ctx.confirmation_required == frozenset({Tool.CAPTURE})
    assert ctx.confirmation_ref == "conf-1"
    assert ctx.deadline_ms == 1_800_000_100_000
    assert ctx.audit_id == "audit-1"
    assert ctx.token_id


def test_an_es256_host_key_is_accepted_too() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    assert verify_agent_token(token(key), verifier(key)).scope.workspace_id == "ws1"


def test_the_same_token_verifies_many_times_because_jti_is_not_single_use() -> None:
    tok = token()
    assert verify_agent_token(tok, verifier()) == verify_agent_token(tok, verifier())


@pytest.mark.parametrize("value", ["", "garbage", "a.b.c", "x" * 20_000])
def test_a_malformed_token_is_refused(value: str) -> None:
    refused(value)


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer ", "Bearer"])
def test_a_missing_or_non_bearer_authorization_header_is_refused(header: str | None) -> None:
    with pytest.raises(UntrustedContext):
        bearer_token(header)


def test_the_bearer_token_is_read_from_the_header() -> None:
    assert bearer_token("Bearer abc.def.ghi") == "abc.def.ghi"


def test_an_expired_token_is_refused() -> None:
    refused(token(now=NOW - 400))


def test_a_token_expired_within_the_leeway_is_still_accepted() -> None:
    verify_agent_token(token(now=NOW - 302), verifier())


def test_a_token_not_yet_valid_is_refused() -> None:
    refused(token(now=NOW + 60))


def test_a_token_signed_by_another_key_is_refused() -> None:
    refused(token(ed25519.Ed25519PrivateKey.generate()))


def test_a_token_with_a_tampered_payload_is_refused() -> None:
    head, _, sig = token().split(".")
    claims = good_claims() | {"workspace": "ws2"}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    refused(f"{head}.{body}.{sig}")


def test_a_token_from_another_issuer_is_refused() -> None:
    refused(token(issuer="https://evil.example"))


def test_a_token_for_another_audience_is_refused() -> None:
    refused(token(audience="another-deployment"))


def test_a_token_for_another_tenant_is_refused() -> None:
    refused(token(tenant="t2"))


def test_a_token_for_an_unregistered_workspace_is_refused() -> None:
    refused(token(workspace="ws9"))


def test_any_workspace_is_accepted_when_none_are_configured() -> None:
    ctx = verify_agent_token(token(workspace="ws9"), verifier(workspaces=()))
    assert ctx.scope.workspace_id == "ws9"


def test_a_lifetime_longer_than_300_seconds_is_refused() -> None:
    refused(token(ttl_s=301))


def test_alg_none_is_refused() -> None:
    refused(jwt.encode(good_claims(), None, algorithm="none"))


def test_hs256_signed_with_the_public_key_is_refused() -> None:
    secret = public_pem(KEY).encode()
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(json.dumps(good_claims()).encode()).rstrip(b"=").decode()
    sig = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    refused(f"{head}.{body}.{base64.urlsafe_b64encode(sig).rstrip(b'=').decode()}")


def test_an_es256_token_is_refused_when_the_host_key_is_ed25519() -> None:
    refused(token(ec.generate_private_key(ec.SECP256R1())))


def test_the_maintenance_permission_is_refused_on_the_agent_path() -> None:
    refused(token(extra_claims={"perm": ["read", "maintain"]}))


@pytest.mark.parametrize(
    "claim",
    ["exp", "iat", "nbf", "jti", "tenant", "workspace", "principal", "agent_id", "session",
     "purpose_ref", "audit_id", "deadline", "capabilities"],
)
def test_a_token_missing_a_required_claim_is_refused(claim: str) -> None:
    claims = good_claims()
    del claims[claim]
    refused(raw_token(claims))


@pytest.mark.parametrize(
    ("claim", "value"),
    [("capabilities", ["search", "admin"]), ("capabilities", "search"), ("deadline", "soon"),
     ("deadline", True), ("workspace", "ws1#x"), ("purpose_ref", ""), ("exp", "later"),
     ("confirm_required", [1]), ("principal", 7)],
)
def test_a_token_with_a_malformed_claim_is_refused(claim: str, value: Any) -> None:
    claims = good_claims() | {claim: value}
    refused(raw_token(claims))


def test_a_maintainer_token_yields_the_operator_identity() -> None:
    tok = mint_maintainer_token(KEY, issuer=ISS, audience=AUD, tenant="t1", now=NOW, subject="ops")
    identity = verify_maintainer_token(tok, verifier())
    assert (identity.tenant_id, identity.subject) == ("t1", "ops")
    assert identity.token_id


def test_an_agent_token_is_not_a_maintainer_token() -> None:
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(token(), verifier())


def test_a_maintainer_token_without_read_is_refused() -> None:
    tok = mint_maintainer_token(
        KEY, issuer=ISS, audience=AUD, tenant="t1", now=NOW, perm=["maintain"]
    )
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(tok, verifier())


def test_a_maintainer_token_for_another_tenant_is_refused() -> None:
    tok = mint_maintainer_token(KEY, issuer=ISS, audience=AUD, tenant="t2", now=NOW)
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(tok, verifier())


def test_an_expired_maintainer_token_is_refused() -> None:
    tok = mint_maintainer_token(KEY, issuer=ISS, audience=AUD, tenant="t1", now=NOW - 600)
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(tok, verifier())


@pytest.mark.parametrize("principal", sorted(INTERNAL_PRINCIPALS))
def test_an_agent_token_naming_a_principal_of_the_service_itself_is_refused(
    principal: str,
) -> None:
    # Its idempotency keys (adjudication, expiry) would otherwise be the agent's to take.
    refused(token(principal=principal))
    assert verify_agent_token(token(principal=principal + " "), verifier()).principal
