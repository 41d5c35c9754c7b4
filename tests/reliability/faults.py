"""Fault injection on the wired boto3 clients through botocore's event hooks.

Four faults, each aimed at the n-th AWS API call of one tool call:

* ``throttle`` / ``internal``: every HTTP attempt of that call is answered, in
  ``before-send``, with the service's real error body (throttling 400, internal 500), so
  botocore's own retry policy runs and gives up as it would against AWS;
* ``connect_timeout``: ``before-send`` raises ConnectTimeoutError on every attempt (the
  request never left);
* ``read_timeout``: the call really runs, then ``after-call`` raises ReadTimeoutError (the
  request was applied but its answer was lost).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

KINDS = ("throttle", "internal", "connect_timeout", "read_timeout")
_ERRORS = {
    ("dynamodb", "throttle"): (400, "com.amazonaws.dynamodb.v20120810#"
                                    "ProvisionedThroughputExceededException"),
    ("dynamodb", "internal"): (500, "com.amazonaws.dynamodb.v20120810#InternalServerError"),
    ("kms", "throttle"): (400, "ThrottlingException"),
    ("kms", "internal"): (500, "KMSInternalException"),
}
_HOOK_ID = "reliability-fault-injector"
_NOWHERE = "https://fault-injected.invalid/"


class _Raw:
    """The minimal urllib3-like body botocore reads a response from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        """The body in one chunk."""
        yield self._body


def error_response(url: str, service: str, kind: str) -> AWSResponse:
    """A service error answer exactly as the JSON protocols carry it."""
    status, error_type = _ERRORS[(service, kind)]
    body = json.dumps({"__type": error_type, "message": "injected fault"}).encode()
    headers = HTTPHeaders()
    headers["Content-Type"] = "application/x-amz-json-1.0"
    headers["x-amzn-RequestId"] = "injected-fault"
    return AWSResponse(url, status, headers, _Raw(body))


@dataclass
class FaultInjector:
    """Counts the API calls of the attached clients and breaks the chosen one."""

    calls: list[str] = field(default_factory=list)
    target: int | None = None
    kind: str = ""
    fired: int = 0
    # Per thread: a search issues calls concurrently, and before-call, before-send and
    # after-call of one call all run on the thread that made it.
    _local: threading.local = field(default_factory=threading.local)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _clients: list[Any] = field(default_factory=list)

    @property
    def _armed(self) -> bool:
        return bool(getattr(self._local, "armed", False))

    @_armed.setter
    def _armed(self, value: bool) -> None:
        self._local.armed = value

    def attach(self, *clients: Any) -> FaultInjector:
        """Hook every client (the injector answers before moto's own stub)."""
        for client in clients:
            events = client.meta.events
            events.register("before-call.*.*", self._before_call, unique_id=_HOOK_ID + "c")
            events.register_first("before-send.*.*", self._before_send,
                                  unique_id=_HOOK_ID + "s")
            events.register("after-call.*.*", self._after_call, unique_id=_HOOK_ID + "a")
            events.register("after-call-error.*.*", self._after_error,
                            unique_id=_HOOK_ID + "e")
            self._clients.append(client)
        return self

    def arm(self, index: int | None, kind: str = "") -> None:
        """Break call number ``index`` (0-based) of what runs next; None = only count."""
        self.calls, self.target, self.kind, self.fired = [], index, kind, 0
        self._armed = False

    def disarm(self) -> None:
        """Stop breaking calls (the counts of the last run stay readable)."""
        self.target = None
        self._armed = False

    def _before_call(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append(f"{model.service_model.endpoint_prefix}.{model.name}")
            self._armed = self.target is not None and len(self.calls) - 1 == self.target
            if self._armed:
                self._local.call = self.calls[-1]

    def _before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        if not self._armed or self.kind == "read_timeout":
            return None
        self.fired += 1
        if self.kind == "connect_timeout":
            raise ConnectTimeoutError(endpoint_url=request.url)
        url = request.url
        # Every before-send handler runs; moto's in-process stub would still apply the
        # request. An address no AWS service answers makes it pass, as the real service
        # never saw a throttled or failed request.
        request.url = _NOWHERE
        service = str(self._local.call).split(".", 1)[0]
        return error_response(url, service, self.kind)

    def _after_call(self, **_: Any) -> None:
        armed, self._armed = self._armed, False
        if armed and self.kind == "read_timeout":
            self.fired += 1
            raise ReadTimeoutError(endpoint_url="injected")

    def _after_error(self, **_: Any) -> None:
        self._armed = False

    @property
    def broken_call(self) -> str:
        """The ``service.Operation`` the armed fault hit."""
        assert self.target is not None
        assert self.target < len(self.calls)
        return self.calls[self.target]
