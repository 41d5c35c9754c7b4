"""The Python host kit against the MCP endpoint Lambda: the claim-rule matrix and rotation.

Each claim set of ``engram_memory_host.conformance`` breaks one rule: the kit refuses it
with that rule named, and signed anyway (``sign_claims``, no check) the service refuses it
with the constant -32603. Kit-minted tokens are accepted; a key ring rotates with no
refused call.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import jwt
import pytest
from engram_memory import bootstrap
from engram_memory_host import (
    ClaimRuleError,
    HostKey,
    HostKeyRing,
    check_agent_claims,
    mint_agent_token,
    sign_claims,
)
from engram_memory_host.conformance import agent_violations

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "events"
ISSUER = "https://host.example"
AUDIENCE = "engram-fixture"
DEPLOYMENT = {"issuer": ISSUER, "audience": AUDIENCE, "tenant": "t1", "workspace": "ws1",
              "purpose_ref": "purpose:fixture"}
UNTRUSTED = {"code": -32603, "message": "Trusted invocation context unavailable"}
OLD, NEW = HostKey.generate("Ed25519"), HostKey.generate("P-256")


class _Context:
    function_name = "engram-mcp-endpoint"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:engram-mcp-endpoint"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


Endpoint = Callable[[str, str], dict[str, Any]]


@pytest.fixture
def endpoint_for(monkeypatch: pytest.MonkeyPatch) -> Callable[[HostKeyRing], Endpoint]:
    """A fresh endpoint container trusting ``ring.jwks()``; call it with (event, token)."""
    for name in ("ENGRAM_ALLOWED_HOSTS", "ENGRAM_ALLOWED_ORIGINS", "ENGRAM_RESOURCE_URL",
                 "ENGRAM_FUNCTION_SEARCH", "ENGRAM_HOST_PUBLIC_KEY_PEM"):
        monkeypatch.delenv(name, raising=False)

    def build(ring: HostKeyRing) -> Endpoint:
        env = {
            "ENGRAM_TENANT_ID": "t1", "ENGRAM_WORKSPACE_IDS": "ws1",
            "ENGRAM_TABLE_NAME": "main", "ENGRAM_KEY_TABLE_NAME": "keys",
            "ENGRAM_PROJECTION_TABLE_NAME": "projection", "ENGRAM_HOST_ISSUER": ISSUER,
            "ENGRAM_AUDIENCE": AUDIENCE, "ENGRAM_HOST_JWKS": ring.jwks_json(),
            "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing", "POWERTOOLS_TRACE_DISABLED": "1",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        spec = importlib.util.spec_from_file_location(
            "mcp_endpoint_handler_kit_test", ROOT / "functions" / "mcp_endpoint" / "handler.py")
        assert spec is not None
        assert spec.loader is not None
        module: ModuleType = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        bootstrap.reset()

        def call(name: str, token: str) -> dict[str, Any]:
            text = (EVENTS / f"apigw_mcp_{name}.json").read_text(encoding="utf-8")
            response = module.lambda_handler(json.loads(text.replace("{{TOKEN}}", token)),
                                             _Context())
            body: dict[str, Any] = json.loads(response["body"])
            return body
        return call

    return build


def listed(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body["result"]["tools"]]


def agent(signer: HostKey | HostKeyRing, **overrides: Any) -> str:
    return mint_agent_token(signer, **{**DEPLOYMENT, "capabilities": ["search", "get"],
                                       "principal": "user-1", "agent_id": "agent-1",
                                       **overrides})


def test_a_kit_minted_agent_token_is_accepted(
    endpoint_for: Callable[[HostKeyRing], Endpoint],
) -> None:
    call = endpoint_for(HostKeyRing([OLD]))
    assert listed(call("modern_tools_list", agent(OLD))) == [
        "engram_memory_search", "engram_memory_get"]


@pytest.mark.parametrize("case", sorted(agent_violations()))
def test_each_claim_rule_is_refused_by_the_kit_and_by_the_service_alike(
    endpoint_for: Callable[[HostKeyRing], Endpoint], case: str,
) -> None:
    claims, rule = agent_violations(issuer=ISSUER, audience=AUDIENCE, tenant="t1",
                                    workspace="ws1", purpose_ref="purpose:fixture")[case]
    with pytest.raises(ClaimRuleError) as caught:
        check_agent_claims(claims)
    assert caught.value.rule == rule
    call = endpoint_for(HostKeyRing([OLD]))
    assert call("modern_tools_list", sign_claims(OLD, claims))["error"] == UNTRUSTED


@pytest.mark.parametrize(("claim", "value"), [
    ("iss", "urn:another-host"), ("aud", "urn:another-deployment"), ("tenant", "t2"),
    ("workspace", "ws9")])
def test_the_deployment_equalities_are_the_service_s_alone(
    endpoint_for: Callable[[HostKeyRing], Endpoint], claim: str, value: str,
) -> None:
    # The kit cannot know the deployment's issuer, audience, tenant or workspaces: a
    # well-formed claim set passes its check, and only the service refuses it.
    token = agent(OLD)
    claims = {**jwt.decode(token, options={"verify_signature": False}),
              claim: value}
    check_agent_claims(claims)
    call = endpoint_for(HostKeyRing([OLD]))
    assert call("modern_tools_list", sign_claims(OLD, claims))["error"] == UNTRUSTED


def test_a_deadline_in_seconds_is_refused_by_the_kit_and_already_passed_for_the_service(
    endpoint_for: Callable[[HostKeyRing], Endpoint],
) -> None:
    seconds = int(time.time()) + 60
    with pytest.raises(ClaimRuleError) as caught:
        agent(OLD, deadline_ms=seconds)
    assert caught.value.rule == "deadline"
    token = agent(OLD, deadline_ms=int(time.time() * 1000) + 60_000)
    claims = {**jwt.decode(token, options={"verify_signature": False}),
              "deadline": seconds}
    call = endpoint_for(HostKeyRing([OLD]))
    result = call("modern_tools_call", sign_claims(OLD, claims))["result"]
    assert result["structuredContent"]["error"]["code"] == "DEADLINE_EXCEEDED"


def test_rotating_the_key_ring_refuses_no_call(
    endpoint_for: Callable[[HostKeyRing], Endpoint],
) -> None:
    ring = HostKeyRing([OLD])
    before = agent(ring)
    ring.add(NEW)  # published: the deployment now trusts both, the old key still signs
    both = endpoint_for(ring)
    assert listed(both("modern_tools_list", before))
    ring.sign_with(NEW.kid)
    after = agent(ring)
    assert jwt.get_unverified_header(after)["kid"] == NEW.kid
    # The old key's live tokens and the new key's are both accepted until the old retires.
    assert listed(both("modern_tools_list", before))
    assert listed(both("modern_tools_list", after))
    ring.retire(OLD.kid)
    retired = endpoint_for(ring)
    assert listed(retired("modern_tools_list", after))
    assert retired("modern_tools_list", before)["error"] == UNTRUSTED
    expired = agent(ring, now=time.time() - 400)
    assert retired("modern_tools_list", expired)["error"] == UNTRUSTED
