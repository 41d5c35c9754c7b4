"""``HostClient``: the host-only routes (``/host/...``) of a tenant, with a maintainer token.

Confirmations (docs/confirmation.md), held candidates (docs/confirmation.md, "Adjudication") and the
export / staged restore of a workspace (docs/backup.md). Each method is one request; an
error status raises ``HostRouteError`` with the route's constant body.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, Literal

WAITING_STATES = ("requested", "awaiting_decision")
"""A confirmation not decided yet; only ``awaiting_decision`` can take a decision."""
Capability = Literal["capture", "request_admission", "withdraw", "forget"]
ExportPart = Literal["records", "tombstones", "journal"]


def _json_object(raw: bytes) -> dict[str, Any]:
    """The JSON object of a response body; ``{}`` for an empty or non-object body."""
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


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
            raise HostRouteError(exc.code, _json_object(exc.read())) from None
        return _json_object(payload)

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

    def wait_while(self, ref: str, *, workspace_id: str, states: tuple[str, ...],
                   timeout_s: float = 30, poll_s: float = 0.5) -> dict[str, Any]:
        """Poll confirmation ``ref`` while its state is one of ``states``; its view once it
        is not, or the last view after ``timeout_s``. ``wait_while(ref, ...,
        states=("requested",))`` waits until a decision can be sent; ``WAITING_STATES``,
        until a human has decided on the review page."""
        give_up = time.monotonic() + timeout_s
        while True:
            shown = self.confirmation(ref, workspace_id=workspace_id)
            if shown.get("state") not in states or time.monotonic() >= give_up:
                return shown
            time.sleep(poll_s)

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

    def export_page(self, *, workspace_id: str, part: ExportPart, at: int | None = None,
                    since: int | None = None, limit: int | None = None,
                    page: str | None = None) -> dict[str, Any]:
        """One page of one part of a workspace's export (``items``, ``at``, ``next``): the
        first page pins the journal cursor ``at``; pass ``next`` back as ``page``."""
        return self._call("GET", "/host/export", query={
            "workspace_id": workspace_id, "part": part, "at": at, "since": since,
            "limit": limit, "page": page})

    def export_part(self, *, workspace_id: str, part: ExportPart,
                    at: int | None = None) -> list[dict[str, Any]]:
        """Every item of one part, following ``next`` to the end."""
        items: list[dict[str, Any]] = []
        answer = self.export_page(workspace_id=workspace_id, part=part, at=at)
        while True:
            items.extend(answer.get("items", []))
            if "next" not in answer:
                return items
            answer = self.export_page(workspace_id=workspace_id, part=part,
                                      page=str(answer["next"]))

    def restore_begin(self, *, workspace_id: str, bundle_digest: str,
                      forgotten_record_ids: list[str] | None = None) -> dict[str, Any]:
        """Fence an empty workspace for the bundle ``bundle_digest`` (or resume it)."""
        return self._call("POST", "/host/restore", {
            "workspace_id": workspace_id, "bundle_digest": bundle_digest,
            "forgotten_record_ids": forgotten_record_ids or []})

    def restore_lines(self, *, workspace_id: str, bundle_digest: str, offset: int,
                      lines: list[str]) -> dict[str, Any]:
        """Upload the bundle's next ``lines`` (each with its newline) from line ``offset``."""
        return self._call("POST", "/host/restore/lines", {
            "workspace_id": workspace_id, "bundle_digest": bundle_digest, "offset": offset,
            "lines": lines})

    def restore_commit(self, *, workspace_id: str, bundle_digest: str) -> dict[str, Any]:
        """Finish a restore whose every line was accepted."""
        return self._call("POST", "/host/restore/commit", {
            "workspace_id": workspace_id, "bundle_digest": bundle_digest})

    def restore_abort(self, *, workspace_id: str) -> dict[str, Any]:
        """Roll a staged restore back."""
        return self._call("DELETE", "/host/restore", query={"workspace_id": workspace_id})
