"""The MCP endpoint Lambda fed API Gateway HTTP API v2 events, in one warm container."""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from engram_memory import bootstrap

from tests.support.host_tokens import mint_agent_token, public_pem

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "events"
KEY = ed25519.Ed25519PrivateKey.generate()
ISSUER = "https://host.example"
AUDIENCE = "engram-fixture"


@dataclass
class FakeLambdaContext:
    function_name: str = "engram-mcp-endpoint"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:engram-mcp-endpoint"
    aws_request_id: str = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    env = {
        "ENGRAM_TENANT_ID": "t1", "ENGRAM_WORKSPACE_IDS": "ws1",
        "ENGRAM_TABLE_NAME": "main", "ENGRAM_KEY_TABLE_NAME": "keys",
        "ENGRAM_PROJECTION_TABLE_NAME": "projection", "ENGRAM_HOST_ISSUER": ISSUER,
        "ENGRAM_AUDIENCE": AUDIENCE, "ENGRAM_HOST_PUBLIC_KEY_PEM": public_pem(KEY),
        "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing", "POWERTOOLS_TRACE_DISABLED": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("ENGRAM_ALLOWED_HOSTS", "ENGRAM_ALLOWED_ORIGINS", "ENGRAM_RESOURCE_URL",
                 "ENGRAM_FUNCTION_SEARCH"):
        monkeypatch.delenv(name, raising=False)
    spec = importlib.util.spec_from_file_location(
        "mcp_endpoint_handler_under_test", ROOT / "functions" / "mcp_endpoint" / "handler.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bootstrap.reset()
    return module


def event(name: str, capabilities: tuple[str, ...] = ("search", "get")) -> dict[str, Any]:
    text = (EVENTS / f"apigw_mcp_{name}.json").read_text()
    token = mint_agent_token(
        KEY, issuer=ISSUER, audience=AUDIENCE, tenant="t1", workspace="ws1",
        purpose_ref="purpose:fixture", capabilities=capabilities, now=time.time(),
    )
    loaded: dict[str, Any] = json.loads(text.replace("{{TOKEN}}", token))
    return loaded


def call(handler: ModuleType, ev: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = handler.lambda_handler(ev, FakeLambdaContext())
    return response["statusCode"], json.loads(response["body"])


def test_two_legacy_calls_work_in_one_warm_container(handler: ModuleType) -> None:
    status, body = call(handler, event("legacy_initialize"))
    assert status == 200
    assert body["result"]["serverInfo"]["name"] == "engram-memory"
    status, body = call(handler, event("legacy_tools_list"))
    assert status == 200
    assert [t["name"] for t in body["result"]["tools"]] == [
        "engram_memory_search", "engram_memory_get"]


def test_modern_era_calls_work_repeatedly_in_one_warm_container(handler: ModuleType) -> None:
    for _ in range(2):
        status, body = call(handler, event("modern_tools_list", ("capture",)))
        assert status == 200
        assert [t["name"] for t in body["result"]["tools"]] == ["engram_memory_capture"]


def test_a_tool_call_whose_function_cannot_be_invoked_is_a_retriable_envelope(
    handler: ModuleType,
) -> None:
    status, body = call(handler, event("modern_tools_call"))
    assert status == 200
    result = body["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "STORE_UNAVAILABLE"
    assert result["structuredContent"]["error"]["retriable"] is True
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_a_request_without_the_host_token_is_refused_with_32603(handler: ModuleType) -> None:
    ev = event("modern_tools_list")
    del ev["headers"]["authorization"]
    _, body = call(handler, ev)
    assert body["error"] == {"code": -32603, "message": "Trusted invocation context unavailable"}


def test_a_request_for_another_host_name_is_refused(handler: ModuleType) -> None:
    ev = event("legacy_tools_list")
    ev["headers"]["host"] = "evil.example"
    response = handler.lambda_handler(ev, FakeLambdaContext())
    assert response["statusCode"] in (400, 403, 421)


def test_the_protected_resource_metadata_names_the_host_issuer(handler: ModuleType) -> None:
    status, body = call(handler, event("well_known"))
    assert status == 200
    assert body["resource"] == "https://abc123.execute-api.eu-west-1.amazonaws.com/mcp"
    assert body["authorization_servers"] == [ISSUER]
    assert body["bearer_methods_supported"] == ["header"]


@pytest.mark.parametrize(("header", "value", "status"), [
    ("host", "attacker.example", 421), ("origin", "https://attacker.example", 403)])
def test_the_metadata_checks_host_and_origin_like_mcp(
    handler: ModuleType, header: str, value: str, status: int
) -> None:
    ev = event("well_known")
    ev["headers"][header] = value
    response = handler.lambda_handler(ev, FakeLambdaContext())
    assert response["statusCode"] == status


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_on_mcp_answer_405(handler: ModuleType, method: str) -> None:
    ev = event("legacy_tools_list")
    ev["requestContext"]["http"]["method"] = method
    ev["headers"]["accept"] = "text/event-stream"
    ev["headers"]["last-event-id"] = "1"
    ev.pop("body", None)
    response = handler.lambda_handler(ev, FakeLambdaContext())
    assert response["statusCode"] == 405
    assert response["headers"]["allow"] == "POST"


def test_a_header_that_is_not_latin_1_is_served(handler: ModuleType) -> None:
    ev = event("legacy_initialize")
    ev["headers"]["user-agent"] = "agent/1.0 \u2603"
    status, body = call(handler, ev)
    assert status == 200
    assert body["result"]["serverInfo"]["name"] == "engram-memory"


def test_a_browser_origin_is_served_only_when_the_stack_lists_it(
        handler: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_ALLOWED_ORIGINS", "https://agents.example.com")
    bootstrap.reset()
    listed = event("legacy_tools_list")
    listed["headers"]["origin"] = "https://agents.example.com"
    status, body = call(handler, listed)
    assert status == 200
    assert body["result"]["tools"]
    other = event("legacy_tools_list")
    other["headers"]["origin"] = "https://evil.example"
    assert handler.lambda_handler(other, FakeLambdaContext())["statusCode"] == 403


@pytest.mark.parametrize("era", ["legacy_initialize", "modern_tools_list"])
@pytest.mark.parametrize(("body", "code"), [
    ("{", -32700), ("null", -32600), ("[]", -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}', -32600)])
def test_an_unreadable_body_is_a_constant_error_before_any_token_check(
    handler: ModuleType, era: str, body: str, code: int
) -> None:
    # Before: the initialize era answered with pydantic's text (and a link to its docs).
    ev = event(era)
    del ev["headers"]["authorization"]
    ev["body"] = body
    response = handler.lambda_handler(ev, FakeLambdaContext())
    assert response["statusCode"] == 400
    message = {-32700: "Parse error",
               -32600: "Body must be a single JSON-RPC request or notification object"}[code]
    assert response["body"] == json.dumps(
        {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": None},
        separators=(",", ":"))


@pytest.mark.parametrize("method", ["PUT", "PATCH", "HEAD", "OPTIONS"])
def test_any_other_method_on_mcp_answers_405_too(handler: ModuleType, method: str) -> None:
    # API Gateway routes ANY /mcp here (infra/constructs/api.py): the README promises 405.
    ev = event("legacy_tools_list")
    ev["requestContext"]["http"]["method"] = method
    response = handler.lambda_handler(ev, FakeLambdaContext())
    assert response["statusCode"] == 405
    assert response["headers"]["allow"] == "POST"


@pytest.mark.parametrize(("name", "change", "status"), [
    ("modern_tools_call", {}, 200),
    ("legacy_tools_list", {}, 200),
    ("legacy_tools_list", {"authorization": ""}, 200),  # a JSON-RPC refusal, still HTTP 200
    ("legacy_tools_list", {"host": "evil.example"}, 421),
    ("legacy_tools_list", {"origin": "https://evil.example"}, 403),
    ("legacy_tools_list", {"method": "GET"}, 405),
    ("legacy_tools_list", {"body": "{"}, 400),
], ids=["get-or-search-call", "list", "no-token", "foreign-host", "foreign-origin", "get",
        "unreadable"])
def test_every_mcp_response_is_no_store(handler: ModuleType, name: str,
                                        change: dict[str, str], status: int) -> None:
    ev = event(name)
    if "method" in change:
        ev["requestContext"]["http"]["method"] = change["method"]
    if "body" in change:
        ev["body"] = change["body"]
    for header in ("authorization", "host", "origin"):
        if header in change:
            ev["headers"][header] = change[header]
    response = handler.lambda_handler(ev, FakeLambdaContext())
    assert response["statusCode"] == status
    assert response["headers"]["cache-control"] == "no-store"


def test_the_public_metadata_keeps_its_own_caching(handler: ModuleType) -> None:
    response = handler.lambda_handler(event("well_known"), FakeLambdaContext())
    assert response["headers"]["cache-control"] == "public, max-age=3600"


def test_the_event_and_its_token_are_never_logged_whatever_the_environment(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
) -> None:
    # Powertools reads POWERTOOLS_LOGGER_LOG_EVENT when the handler is decorated: set first.
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "true")
    loaded: ModuleType = request.getfixturevalue("handler")
    stream = io.StringIO()
    sink = logging.StreamHandler(stream)
    target = logging.getLogger("engram-mcp-endpoint")
    target.addHandler(sink)
    monkeypatch.setattr(target, "level", logging.DEBUG)
    try:
        ev = event("legacy_tools_list")
        token = ev["headers"]["authorization"].removeprefix("Bearer ")
        loaded.lambda_handler(ev, FakeLambdaContext())
    finally:
        target.removeHandler(sink)
    assert token not in stream.getvalue()
