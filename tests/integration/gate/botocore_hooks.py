"""botocore event hooks on a fresh default boto3 session, for the host API's own clients.

The host API builds its clients lazily (``boto3.client`` → the default session), so a
hook registered on a fresh default session before its wiring is built reaches exactly
those clients: faults are injected where the network would fail, and ``lambda:Invoke``
(which moto cannot execute) is answered by running the real function handler.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

import boto3
import urllib3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from engram_memory import bootstrap
from engram_memory.composition import host_api
from engram_memory.local.inprocess_invoker import LocalLambdaContext

Hook = Callable[..., Any]


def _rewire_host_api() -> None:
    """Rebuild the host API (settings re-read, clients from the current session)."""
    bootstrap.settings.cache_clear()
    host_api.service.cache_clear()


@contextmanager
def default_session_hooks(hooks: dict[str, Hook]) -> Iterator[None]:
    """Register ``{event name: hook}`` on a fresh default session; re-wire the host API."""
    previous = boto3.DEFAULT_SESSION
    session = boto3.Session()
    for name, hook in hooks.items():
        session.events.register(name, hook)
    boto3.DEFAULT_SESSION = session
    _rewire_host_api()
    try:
        yield
    finally:
        boto3.DEFAULT_SESSION = previous
        _rewire_host_api()


def http_response(request: AWSPreparedRequest, status: int, body: bytes,
                  headers: dict[str, str] | None = None) -> AWSResponse:
    """A raw HTTP answer botocore parses as if the service had sent it."""
    raw = urllib3.HTTPResponse(body=io.BytesIO(body), status=status, preload_content=False)
    return AWSResponse(request.url, status, headers or {}, raw)


def throttled(request: AWSPreparedRequest, **_: Any) -> AWSResponse:
    """DynamoDB's answer to a throttled request (JSON 1.0 protocol)."""
    body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                       "message": "Rate of requests exceeds the allowed throughput."})
    return http_response(request, 400, body.encode(), {
        "x-amzn-ErrorType": "ThrottlingException",
        "content-type": "application/x-amz-json-1.0"})


class FakeLambdaService:
    """Answers ``lambda:Invoke`` by running the real handler of the invoked function."""

    def __init__(self, handlers: dict[str, Callable[[dict[str, Any], Any], Any]]) -> None:
        """Map function names to the ``lambda_handler`` each one runs."""
        self.handlers = handlers
        self.invocations: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        """The service side of one Invoke (RequestResponse)."""
        name = unquote(request.url.split("/functions/", 1)[1].split("/", 1)[0])
        payload = json.loads(request.body or b"null")
        self.invocations.append((name, payload))
        handler = self.handlers.get(name)
        if handler is None:
            body = json.dumps({"Type": "User", "message": "Function not found"}).encode()
            return http_response(request, 404, body, {
                "x-amzn-ErrorType": "ResourceNotFoundException"})
        result = handler(payload, LocalLambdaContext(name))
        return http_response(request, 200, json.dumps(result).encode(),
                             {"X-Amz-Executed-Version": "$LATEST"})
