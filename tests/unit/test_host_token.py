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
    MAX_MAINTAINER_WORKSPACES,
    MAX_REF_BYTES,
    HostTokenVerifier,
    UntrustedContext,
    bearer_token,
    keys_from_jwks,
    verifier_from_settings,
    verify_agent_token,
    verify_maintainer_token,
)
from engram_memory.settings import Settings
from engram_memory_host import ClaimRuleError, HostKey
from engram_memory_host import mint_maintainer_token as kit_mint_maintainer_token

from tests.support.host_tokens import (
    host_jwks,
    key_id,
    mint_agent_token,
    mint_maintainer_token,
    public_jwk,
    public_pem,
)

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
    tok = mint_maintainer_token(KEY, issuer=ISS, audience=AUD, tenant="t1", now=NOW, subject="ops",
                                tenant_wide=True)
    identity = verify_maintainer_token(tok, verifier())
    assert (identity.tenant_id, identity.subject) == ("t1", "ops")
    assert identity.token_id


# --- maintainer-token scope (issue 35 item 2) ----------------------------------------------


def maintainer_claims(**scope: Any) -> dict[str, Any]:
    """A maintainer token's claims with the given scope claims (and nothing else of scope)."""
    return {"iss": ISS, "aud": AUD, "sub": "ops", "jti": "j-1", "iat": int(NOW),
            "nbf": int(NOW), "exp": int(NOW) + 60, "tenant": "t1",
            "perm": ["read", "maintain"], **scope}


def test_a_tenant_wide_maintainer_token_covers_every_workspace() -> None:
    identity = verify_maintainer_token(raw_token(maintainer_claims(tenant_wide=True)),
                                       verifier())
    assert identity.workspaces is None
    assert identity.covers("ws1")
    assert identity.covers("any-other")


def test_a_scoped_maintainer_token_covers_only_its_workspaces() -> None:
    tok = mint_maintainer_token(KEY, issuer=ISS, audience=AUD, tenant="t1", now=NOW,
                                workspaces=["ws1", "ws2"])
    identity = verify_maintainer_token(tok, verifier())
    assert identity.workspaces == frozenset({"ws1", "ws2"})
    assert identity.covers("ws1")
    assert identity.covers("ws2")
    assert not identity.covers("ws3")
    assert not identity.covers("")


@pytest.mark.parametrize("scope", [
    {},  # neither: the old claim set is no longer tenant-wide by default
    {"workspace": "ws1"},  # the singular claim the old verifier ignored
    {"tenant_wide": False},
    {"workspaces": ["ws1"], "tenant_wide": True},  # both
    {"workspaces": []},
    {"workspaces": "ws1"},
    {"workspaces": ["ws1", 7]},
    {"workspaces": ["ws1#x"]},
    {"workspaces": [""]},
    {"workspaces": ["x" * (MAX_REF_BYTES + 1)]},
    {"workspaces": [f"ws{i}" for i in range(MAX_MAINTAINER_WORKSPACES + 1)]},
    {"tenant_wide": "true"},
    {"tenant_wide": 1},
    {"tenant_wide": None},
])
def test_a_maintainer_token_without_exactly_one_valid_scope_is_refused(
    scope: dict[str, Any],
) -> None:
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(raw_token(maintainer_claims(**scope)), verifier())


def test_a_maintainer_token_may_name_up_to_the_bound_of_workspaces() -> None:
    listed = [f"ws{i}" for i in range(MAX_MAINTAINER_WORKSPACES)]
    identity = verify_maintainer_token(raw_token(maintainer_claims(workspaces=listed)),
                                       verifier())
    assert identity.workspaces == frozenset(listed)


@pytest.mark.parametrize("scope", [{}, {"workspaces": ["a"], "tenant_wide": True},
                                   {"workspaces": []}])
def test_minting_refuses_a_maintainer_token_without_exactly_one_scope(
    scope: dict[str, Any],
) -> None:
    with pytest.raises(ClaimRuleError) as caught:
        kit_mint_maintainer_token(HostKey(KEY, "k1"), issuer=ISS, audience=AUD, tenant="t1",
                                  subject="ops", now=NOW, **scope)
    assert caught.value.rule == "maintainer-scope"


def test_an_agent_token_is_not_a_maintainer_token() -> None:
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(token(), verifier())


def test_a_maintainer_token_without_read_is_refused() -> None:
    tok = mint_maintainer_token(
        KEY, issuer=ISS, audience=AUD, tenant="t1", now=NOW, perm=["maintain"],
        tenant_wide=True,
    )
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(tok, verifier())


def test_a_maintainer_token_for_another_tenant_is_refused() -> None:
    tok = mint_maintainer_token(KEY, issuer=ISS, audience=AUD, tenant="t2", now=NOW,
                                tenant_wide=True)
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(tok, verifier())


def test_an_expired_maintainer_token_is_refused() -> None:
    tok = mint_maintainer_token(KEY, issuer=ISS, audience=AUD, tenant="t1", now=NOW - 600,
                                tenant_wide=True)
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(tok, verifier())


@pytest.mark.parametrize("principal", sorted(INTERNAL_PRINCIPALS))
def test_an_agent_token_naming_a_principal_of_the_service_itself_is_refused(
    principal: str,
) -> None:
    # Its idempotency keys (adjudication, expiry) would otherwise be the agent's to take.
    refused(token(principal=principal))
    assert verify_agent_token(token(principal=principal + " "), verifier()).principal


# --- host key sets and rotation (issue 26 item 6) ----------------------------------------

OLD_KEY = ed25519.Ed25519PrivateKey.generate()
NEW_KEY = ec.generate_private_key(ec.SECP256R1())  # a rotation may change the key type too
ENV = {"ENGRAM_TENANT_ID": "t1", "ENGRAM_WORKSPACE_IDS": "ws1", "ENGRAM_TABLE_NAME": "main",
       "ENGRAM_KEY_TABLE_NAME": "keys", "ENGRAM_PROJECTION_TABLE_NAME": "projection",
       "ENGRAM_HOST_ISSUER": ISS, "ENGRAM_AUDIENCE": AUD}


def deployed(*keys: Any) -> HostTokenVerifier:
    """The verifier a deployment builds from its settings, trusting exactly ``keys``."""
    settings = Settings.from_env({**ENV, "ENGRAM_HOST_JWKS": host_jwks(*keys)})
    return verifier_from_settings(settings, clock=lambda: NOW)


def host_calls(signer: Any) -> list[tuple[str, str]]:
    """What the host sends when signing with ``signer``: an agent and a maintainer token."""
    return [("agent", token(signer)),
            ("maintainer", mint_maintainer_token(signer, issuer=ISS, audience=AUD,
                                                 tenant="t1", now=NOW, tenant_wide=True))]


def refusals(v: HostTokenVerifier, calls: list[tuple[str, str]]) -> int:
    refused_calls = 0
    for kind, tok in calls:
        try:
            if kind == "agent":
                verify_agent_token(tok, v)
            else:
                verify_maintainer_token(tok, v)
        except UntrustedContext:
            refused_calls += 1
    return refused_calls


def ed25519_token(header: dict[str, Any], claims: dict[str, Any], key: Any) -> str:
    """A token with exactly this header (PyJWT would refuse to write some of them)."""
    def part(value: Any) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")
    signing_input = part(header) + b"." + part(claims)
    signature = base64.urlsafe_b64encode(key.sign(signing_input)).rstrip(b"=")
    return (signing_input + b"." + signature).decode()


def test_a_key_rotation_refuses_no_call_at_any_step() -> None:
    # Before: one key only; deploying the new one refused every token the old one signed
    # (up to a token lifetime) and vice versa.
    in_flight = host_calls(OLD_KEY)  # signed before the rotation, still within their lifetime
    assert refusals(deployed(OLD_KEY), in_flight) == 0
    # 1. add the new key: the host still signs with the old one.
    step1 = deployed(OLD_KEY, NEW_KEY)
    assert refusals(step1, in_flight + host_calls(OLD_KEY)) == 0
    # 2. the host switches its signer; tokens the old key signed are still in flight.
    assert refusals(step1, in_flight + host_calls(OLD_KEY) + host_calls(NEW_KEY)) == 0
    # 3. a token lifetime later, remove the old key.
    step3 = deployed(NEW_KEY)
    assert refusals(step3, host_calls(NEW_KEY)) == 0
    # The old key is trusted no more: its kid names no configured key.
    assert refusals(step3, host_calls(OLD_KEY)) == 2


def test_the_kid_alone_selects_the_key() -> None:
    v = deployed(OLD_KEY, NEW_KEY)
    claims = good_claims()
    # A token signed by the old key but naming the new key's kid is refused (wrong key).
    refused(jwt.encode(claims, OLD_KEY, algorithm="EdDSA",
                       headers={"kid": key_id(NEW_KEY)}), v)
    # The alg must be the selected key's: ES256 under the Ed25519 key's kid is refused.
    refused(jwt.encode(claims, NEW_KEY, algorithm="ES256",
                       headers={"kid": key_id(OLD_KEY)}), v)
    assert verify_agent_token(jwt.encode(claims, NEW_KEY, algorithm="ES256",
                                         headers={"kid": key_id(NEW_KEY)}), v)


@pytest.mark.parametrize("header", [
    {"kid": "no-such-key"}, {}, {"kid": 7}, {"kid": ""},
    {"kid": "@OLD", "jwk": "@JWK"}, {"kid": "@OLD", "jku": "https://attacker.example/jwks"},
    {"kid": "@OLD", "x5u": "https://attacker.example/cert"}, {"kid": "@OLD", "x5c": ["MIIB"]},
], ids=["unknown-kid", "no-kid", "kid-not-a-string", "empty-kid", "jwk", "jku", "x5u", "x5c"])
def test_a_token_naming_no_configured_key_or_carrying_its_own_is_refused(
    header: dict[str, Any]
) -> None:
    resolved = {name: ({"kid": key_id(OLD_KEY)} | public_jwk(OLD_KEY) if value == "@JWK"
                       else key_id(OLD_KEY) if value == "@OLD" else value)
                for name, value in header.items()}
    tok = ed25519_token({"alg": "EdDSA", "typ": "JWT", **resolved}, good_claims(), OLD_KEY)
    refused(tok, deployed(OLD_KEY, NEW_KEY))
    with pytest.raises(UntrustedContext):
        verify_maintainer_token(tok, deployed(OLD_KEY, NEW_KEY))


def test_a_single_pem_deployment_is_a_set_of_one_whatever_the_kid() -> None:
    # Backward compatibility: a deployment still configured with one PEM key accepts its
    # host's tokens with or without a kid (there is nothing to select), as before.
    claims = good_claims()
    for headers in ({}, {"kid": "anything"}):
        assert verify_agent_token(jwt.encode(claims, KEY, algorithm="EdDSA", headers=headers),
                                  verifier())
    refused(jwt.encode(claims, KEY, algorithm="EdDSA", headers={"jku": "https://x.example"}))


@pytest.mark.parametrize("entries", [
    [], [{"kty": "OKP", "crv": "Ed25519", "x": "@X"}],
    [{"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "@X", "d": "@X"}],
    [{"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "@X", "alg": "ES256"}],
    [{"kid": "a", "kty": "oct", "k": "c2VjcmV0"}],
    [{"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "@X"},
     {"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "@X"}],
    [{"kid": f"k{n}", "kty": "OKP", "crv": "Ed25519", "x": "@X"} for n in range(9)],
], ids=["empty", "no-kid", "private", "alg-mismatch", "symmetric", "duplicate-kid", "too-many"])
def test_a_key_set_that_is_not_public_named_ed25519_or_p256_keys_is_refused(
    entries: list[dict[str, Any]]
) -> None:
    x = public_jwk(OLD_KEY)["x"]
    keys = [{name: x if value == "@X" else value for name, value in entry.items()}
            for entry in entries]
    with pytest.raises(ValueError, match="host key"):
        keys_from_jwks({"keys": keys})


def test_a_p384_key_in_the_set_is_refused() -> None:
    p384 = ec.generate_private_key(ec.SECP384R1())
    with pytest.raises(ValueError, match="host key"):
        keys_from_jwks({"keys": [public_jwk(p384, "p384") | {"alg": "ES384"}]})
    with pytest.raises(ValueError, match="host key"):
        keys_from_jwks({"keys": [{k: v for k, v in public_jwk(p384, "p384").items()
                                  if k != "alg"}]})
