"""``HostClient``: the host-only routes (``/host/...``) of a tenant, with a maintainer token.

Export and restore routes are not wrapped yet: they will be methods here when the service
exposes them as host routes.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, Literal

Capability = Literal["capture", "request_admission", "withdraw", "forget"]


class HostRouteError(RuntimeError):
    """A host route answered an error status (``status``; ``body`` is its constant JSON)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        """The HTTP status and the parsed error body."""
        super().__init__(f"host route answered {status}: {body.get('code', body)}")
        self.status = status
        self.body = body


class HostClient:
    """Calls the host routes under ``base_url`` (the tenant's API base, without ``/mcp``);
    ``token`` returns a maintainer token (called once per request, so it can mint afresh)."""

    def __init__(self, base_url: str, token: Callable[[], str], timeout_s: float = 30) -> None:
        """``base_url`` like ``http://127.0.0.1:8787``."""
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._timeout_s = timeout_s

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              query: dict[str, Any] | None = None) -> dict[str, Any]:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - the caller's configured base URL
            url, data=data, method=method,
            headers={"Authorization": f"Bearer {self._token()}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:  # noqa: S310
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            parsed = json.loads(raw) if raw else {}
            raise HostRouteError(exc.code, parsed if isinstance(parsed, dict) else {}) from None
        answer = json.loads(payload) if payload else {}
        return answer if isinstance(answer, dict) else {}

    def request_confirmation(self, *, workspace_id: str, capability: Capability,
                             principal: str, arguments: dict[str, Any] | None = None,
                             target: str | None = None, operation_digest: str | None = None,
                             ttl_seconds: int = 300) -> dict[str, Any]:
        """Ask a human to confirm one gated call: give the exact ``arguments`` the agent
        will send (or ``target`` + ``operation_digest``). Returns ``elicitationRef``, …"""
        body: dict[str, Any] = {"workspace_id": workspace_id, "capability": capability,
                                "principal": principal, "ttl_seconds": ttl_seconds}
        if arguments is not None:
            body["arguments"] = arguments
        else:
            body.update(target=target or "", operation_digest=operation_digest)
        return self._call("POST", "/host/confirmations", body)

    def decide_confirmation(self, ref: str, *, workspace_id: str,
                            decision: Literal["approve", "reject"],
                            approver: str) -> dict[str, Any]:
        """Record the human's decision on confirmation ``ref``."""
        return self._call("POST", f"/host/confirmations/{urllib.parse.quote(ref, safe='')}"
                          "/decision", {"workspace_id": workspace_id, "decision": decision,
                                        "approver": approver})

    def confirmation(self, ref: str, *, workspace_id: str) -> dict[str, Any]:
        """The state of confirmation ``ref``."""
        return self._call("GET", f"/host/confirmations/{urllib.parse.quote(ref, safe='')}",
                          query={"workspace_id": workspace_id})

    def pending_confirmations(self, *, workspace_id: str, limit: int | None = None,
                              cursor: str | None = None) -> dict[str, Any]:
        """One page (``items``, ``nextCursor``) of confirmations waiting for a decision."""
        return self._call("GET", "/host/confirmations", query={
            "workspace_id": workspace_id, "state": "pending", "limit": limit, "cursor": cursor})

    def held_candidates(self, *, workspace_id: str, limit: int | None = None,
                        cursor: str | None = None) -> dict[str, Any]:
        """One page of candidates held for the host's adjudication (metadata only)."""
        return self._call("GET", "/host/adjudications", query={
            "workspace_id": workspace_id, "limit": limit, "cursor": cursor})

    def held_candidate(self, candidate_id: str, *, workspace_id: str) -> dict[str, Any]:
        """A held candidate's payload, for the reviewer."""
        return self._call("GET", "/host/adjudications/"
                          + urllib.parse.quote(candidate_id, safe=""),
                          query={"workspace_id": workspace_id})

    def adjudicate(self, candidate_id: str, *, workspace_id: str,
                   decision: Literal["accept", "reject"],
                   approver: str | None = None) -> dict[str, Any]:
        """Accept or reject a held candidate; returns the admission outcome."""
        body: dict[str, Any] = {"workspace_id": workspace_id, "decision": decision}
        if approver is not None:
            body["approver"] = approver
        return self._call("POST", "/host/adjudications/"
                          + urllib.parse.quote(candidate_id, safe=""), body)
