"""Fault injection on the wired boto3 clients through botocore's event hooks.

Four faults, each aimed at the n-th AWS API call of one tool call:

* ``throttle`` / ``internal``: every HTTP attempt of that call is answered, in
  ``before-send``, with the service's real error body (throttling 400, internal 500), so
  botocore's own retry policy runs and gives up as it would against AWS;
* ``connect_timeout``: ``before-send`` raises ConnectTimeoutError on every attempt (the
  request never left);
* ``read_timeout``: the call really runs, then ``after-call`` raises ReadTimeoutError (the
  request was applied but its answer was lost).

Some calls run concurrently (a tool overlaps independent calls: docs/write_path.md, "Round
trips"), so the n-th call is named by the counting run before it (operation and
occurrence, not its position in a racy order) and whether a call is the broken one is
kept per thread.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
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
    _clients: list[Any] = field(default_factory=list)
    _sequence: list[str] = field(default_factory=list)
    _aim: tuple[str, int] | None = None
    _counting: bool = False
    _seen: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _local: threading.local = field(default_factory=threading.local)

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
        """Break call number ``index`` (0-based) of what runs next; None = only count.

        ``index`` counts in the sequence the last counting run (``arm(None)``) saw.
        """
        self._counting = index is None
        if index is None:
            self._sequence, self._aim = [], None
        else:
            name = self._sequence[index] if self._sequence else ""
            self._aim = (name, self._sequence[:index].count(name))
        self.calls, self.target, self.kind, self.fired = [], index, kind, 0
        self._seen = Counter()
        self._local.armed = False

    def disarm(self) -> None:
        """Stop breaking calls (the counts of the last run stay readable)."""
        self.target, self._aim, self._counting = None, None, False
        self._local.armed = False

    def _before_call(self, model: Any, **_: Any) -> None:
        name = f"{model.service_model.endpoint_prefix}.{model.name}"
        with self._lock:
            self.calls.append(name)
            if self._counting:
                self._sequence.append(name)
            occurrence = self._seen[name]
            self._seen[name] += 1
        self._local.armed = self._aim == (name, occurrence)

    def _armed(self) -> bool:
        return bool(getattr(self._local, "armed", False))

    def _before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        if not self._armed() or self.kind == "read_timeout":
            return None
        self.fired += 1
        if self.kind == "connect_timeout":
            raise ConnectTimeoutError(endpoint_url=request.url)
        url = request.url
        # Every before-send handler runs; moto's in-process stub would still apply the
        # request. An address no AWS service answers makes it pass, as the real service
        # never saw a throttled or failed request.
        request.url = _NOWHERE
        assert self._aim is not None
        service = self._aim[0].split(".", 1)[0]
        return error_response(url, service, self.kind)

    def _after_call(self, **_: Any) -> None:
        armed, self._local.armed = self._armed(), False
        if armed and self.kind == "read_timeout":
            self.fired += 1
            raise ReadTimeoutError(endpoint_url="injected")

    def _after_error(self, **_: Any) -> None:
        self._local.armed = False

    @property
    def broken_call(self) -> str:
        """The ``service.Operation`` the armed fault hit."""
        assert self._aim is not None
        assert self._aim[0] in self.calls
        return self._aim[0]
