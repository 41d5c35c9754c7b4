"""Every claim rule of docs/mcp.md refused by the kit before signing, with the rule named."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from engram_memory_host import (
    ClaimRuleError,
    HostKey,
    check_agent_claims,
    check_maintainer_claims,
    mint_agent_token,
    mint_maintainer_token,
)
from engram_memory_host.conformance import (
    agent_violations,
    maintainer_violations,
    valid_agent_claims,
)

KEY = HostKey.generate()
AGENT: dict[str, Any] = {
    "issuer": "urn:host", "audience": "urn:engram", "tenant": "t1", "workspace": "ws1",
    "purpose_ref": "purpose:p", "capabilities": ["search"], "principal": "user-1",
    "agent_id": "agent-1",
}
MAINTAINER: dict[str, Any] = {"issuer": "urn:host", "audience": "urn:engram", "tenant": "t1",
                              "subject": "reviewer"}


def refused(call: Any, **arguments: Any) -> str:
    with pytest.raises(ClaimRuleError) as caught:
        call(KEY, **arguments)
    return caught.value.rule


@pytest.mark.parametrize(("change", "rule"), [
    ({"ttl_s": 301}, "lifetime"),
    ({"ttl_s": 0}, "lifetime"),
    ({"issuer": ""}, "ref"),
    ({"audience": "a" * 513}, "ref"),
    ({"tenant": "t#1"}, "no-hash"),
    ({"workspace": "ws#1"}, "no-hash"),
    ({"workspace": ""}, "ref"),
    ({"principal": "host:adjudication"}, "internal-principal"),
    ({"principal": "system:expiry-sweeper"}, "internal-principal"),
    ({"principal": "e\u0301"}, "ref"),
    ({"agent_id": ""}, "ref"),
    ({"session": ""}, "ref"),
    ({"purpose_ref": "p" * 600}, "ref"),
    ({"audit_id": ""}, "ref"),
    ({"deadline_ms": 0}, "deadline"),
    ({"deadline_ms": int(time.time())}, "deadline"),
    ({"capabilities": ["search", "delete"]}, "capabilities"),
    ({"capabilities": "search"}, "capabilities"),
    ({"confirm_required": ["approve"]}, "capabilities"),
    ({"confirmation_ref": ""}, "ref"),
])
def test_mint_agent_token_refuses_each_rule_by_name(change: dict[str, Any], rule: str) -> None:
    assert refused(mint_agent_token, **{**AGENT, **change}) == rule


@pytest.mark.parametrize(("change", "rule"), [
    ({}, "maintainer-scope"),
    ({"workspaces": ["ws1"], "tenant_wide": True}, "maintainer-scope"),
    ({"workspaces": []}, "maintainer-scope"),
    ({"workspaces": [f"w{i}" for i in range(65)]}, "maintainer-scope"),
    ({"workspaces": ["ws#1"]}, "no-hash"),
    ({"tenant_wide": True, "subject": ""}, "ref"),
    ({"tenant_wide": True, "ttl_s": 301}, "lifetime"),
    ({"tenant_wide": True, "tenant": "a#b"}, "no-hash"),
])
def test_mint_maintainer_token_refuses_each_rule_by_name(change: dict[str, Any],
                                                         rule: str) -> None:
    assert refused(mint_maintainer_token, **{**MAINTAINER, **change}) == rule


@pytest.mark.parametrize("case", sorted(agent_violations()))
def test_a_violating_agent_claim_set_is_refused_with_its_rule(case: str) -> None:
    claims, rule = agent_violations()[case]
    with pytest.raises(ClaimRuleError) as caught:
        check_agent_claims(claims)
    assert caught.value.rule == rule


@pytest.mark.parametrize("case", sorted(maintainer_violations()))
def test_a_violating_maintainer_claim_set_is_refused_with_its_rule(case: str) -> None:
    claims, rule = maintainer_violations()[case]
    with pytest.raises(ClaimRuleError) as caught:
        check_maintainer_claims(claims)
    assert caught.value.rule == rule


def test_a_valid_agent_token_carries_every_claim_the_service_reads() -> None:
    token = mint_agent_token(KEY, **AGENT, confirmation_ref="conf-1", now=1_800_000_000)
    assert jwt.get_unverified_header(token) == {"alg": "EdDSA", "kid": KEY.kid, "typ": "JWT"}
    claims = jwt.decode(token, KEY.private_key.public_key(), algorithms=["EdDSA"],
                        audience="urn:engram",
                        options={"verify_exp": False, "verify_iat": False,
                                 "verify_nbf": False})
    assert claims["exp"] - claims["iat"] == 300
    assert claims["deadline"] == claims["exp"] * 1000
    assert claims["principal"] == claims["sub"] == "user-1"
    assert claims["confirmation_ref"] == "conf-1"
    assert "perm" not in claims
    check_agent_claims(claims)
    assert valid_agent_claims().keys() <= claims.keys() | {"confirmation_ref"}


def test_a_maintainer_token_is_scoped_one_way_only() -> None:
    scoped = jwt.decode(mint_maintainer_token(KEY, **MAINTAINER, workspaces=["ws1"]),
                        options={"verify_signature": False})
    wide = jwt.decode(mint_maintainer_token(KEY, **MAINTAINER, tenant_wide=True),
                      options={"verify_signature": False})
    assert (scoped["workspaces"], "tenant_wide" in scoped) == (["ws1"], False)
    assert (wide["tenant_wide"], "workspaces" in wide) == (True, False)
    assert scoped["perm"] == wide["perm"] == ["read", "maintain"]
