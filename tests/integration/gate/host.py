"""Drive the real host-routes Lambda handler with API Gateway HTTP API v2 events."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.host_api.handler import lambda_handler

_BASE = json.loads((Path(__file__).parents[2] / "events" /
                    "apigw_host_confirmation_request.json").read_text(encoding="utf-8"))


def host_event(method: str, path: str, token: str | None, body: Any = None,
               query: dict[str, str] | None = None) -> dict[str, Any]:
    """The v2 event API Gateway sends for one host request."""
    event: dict[str, Any] = copy.deepcopy(_BASE)
    event["rawPath"] = path
    event["requestContext"]["http"].update(method=method, path=path)
    if token is not None:
        event["headers"]["authorization"] = f"Bearer {token}"
    if body is None:
        event.pop("body", None)
    else:
        event["body"] = body if isinstance(body, str) else json.dumps(body)
    if query:
        event["queryStringParameters"] = query
        event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in query.items())
    return event


def host_call(method: str, path: str, token: str | None, body: Any = None,
              query: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) of one host request through the Lambda handler."""
    response = lambda_handler(host_event(method, path, token, body, query),
                              LocalLambdaContext("engram-host-api"))
    return int(response["statusCode"]), json.loads(response["body"])


def request_confirmation(token: str, workspace_id: str, capability: str, principal: str,
                         arguments: dict[str, Any], ttl_seconds: int = 30) -> str:
    """POST /host/confirmations with the exact arguments; the elicitation ref."""
    status, body = host_call("POST", "/host/confirmations", token, {
        "workspace_id": workspace_id, "capability": capability, "principal": principal,
        "arguments": arguments, "ttl_seconds": ttl_seconds,
    })
    assert status == 201, body
    return str(body["elicitationRef"])


def decide(token: str, workspace_id: str, ref: str, decision: str) -> dict[str, Any]:
    """POST /host/confirmations/{ref}/decision; the settled view."""
    status, body = host_call("POST", f"/host/confirmations/{ref}/decision", token, {
        "workspace_id": workspace_id, "decision": decision, "approver": "alice@example.test",
    })
    assert status == 200, body
    return body
