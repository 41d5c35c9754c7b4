"""The memory flow a tenant runs, as steps over the rehearsal's functions.

Agent calls go through the MCP endpoint function (which ``lambda:Invoke``s each tool's
function), host calls through the host API function, and the event sources are fed the way
AWS feeds them (``Rehearsal.feed_*``).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

from tests.rehearsal.harness import Rehearsal
from tests.support.host_tokens import mint_agent_token, mint_maintainer_token

PURPOSE = "purpose:rehearsal"
TOOLS = ["search", "get", "capture", "request_admission", "withdraw", "forget"]
PRINCIPAL = "rehearsal-user"
BOTH = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}


def capture_arguments(text: str) -> dict[str, Any]:
    """A valid capture of one decision citing one source."""
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return {
        "idempotency_key": "rehearsal-capture-" + secrets.token_hex(8),
        "payload": {
            "schema_version": 2, "purpose_ref": PURPOSE,
            "valid_time": {"t": 1_790_000_000_000},
            "components": [{"component_id": "c1", "kind": "decision", "text": text,
                            "citation_ids": ["cit1"]}],
            "primary_component_id": "c1",
            "primary_event": {"at": 1_790_000_000_000, "type_ref": "event:decided",
                              "citation_id": "cit1"},
            "citations": [{"citation_id": "cit1", "source_ref": "doc:runbook",
                           "locator": {"scheme": "url", "value": "https://wiki.example/rb"},
                           "content_digest": digest}],
        },
        "evidence": {"evidence_ref": "ev:runbook", "evidence_digest": digest,
                     "citation_ids": ["cit1"]},
    }


def value(envelope: dict[str, Any]) -> dict[str, Any]:
    """The success value of a tool envelope (fails with its error otherwise)."""
    assert envelope.get("ok") is True, envelope
    return dict(envelope["output"]["value"])


class Flow:
    """A workspace of the rehearsed tenant, seen by one agent and one host operator."""

    def __init__(self, rehearsal: Rehearsal) -> None:
        """Tokens are minted with the host key whose public half the template carries."""
        self.r = rehearsal
        self.s = rehearsal.synthesized
        self.workspace = self.s.workspaces[0]

    def agent(self, **claims: Any) -> str:
        """A short-lived agent token for this workspace."""
        return mint_agent_token(self.s.host_key, issuer=self.s.issuer, audience=self.s.audience,
                                tenant=self.s.tenant, workspace=self.workspace,
                                purpose_ref=PURPOSE, capabilities=TOOLS, principal=PRINCIPAL,
                                now=time.time(), ttl_s=300, **claims)

    def operator(self) -> str:
        """A short-lived host-operator token."""
        return mint_maintainer_token(self.s.host_key, issuer=self.s.issuer,
                                     audience=self.s.audience, tenant=self.s.tenant,
                                     now=time.time(), ttl_s=300, tenant_wide=True)

    def call(self, tool: str, arguments: dict[str, Any], **claims: Any) -> dict[str, Any]:
        """One tool call's envelope (no call may meet an access denial)."""
        envelope = self.r.call_tool(tool, arguments, self.agent(**claims))
        assert self.r.denials == [], (tool, self.r.denials)
        return envelope

    def capture(self, text: str) -> str:
        """Capture; the candidate id."""
        return str(value(self.call("capture", capture_arguments(text)))["candidate_id"])

    def admit_by_host(self, candidate_id: str) -> str:
        """request_admission (the policy holds it for the host), then the host accepts."""
        held = value(self.call("request_admission", {
            "candidate_id": candidate_id,
            "idempotency_key": "rehearsal-admit-" + secrets.token_hex(8)}))
        assert held["outcome"]["status"] == "pending_adjudication", held
        status, body = self.r.host("POST", f"/host/adjudications/{candidate_id}",
                                   self.operator(), {"workspace_id": self.workspace,
                                                     "decision": "accept",
                                                     "approver": "rehearsal-approver"})
        assert status == 200, body
        assert body["outcome"]["status"] == "accepted", body
        return str(body["outcome"]["record_id"])

    def search(self, query: str, **extra: Any) -> list[str]:
        """Record ids a search returns."""
        found = value(self.call("search", {"query": query, "purpose_ref": PURPOSE, **extra}))
        return [packet["record"]["record_id"] for packet in found["records"]]

    def approved_confirmation(self, capability: str, arguments: dict[str, Any]) -> str:
        """The host asks, the notifier stores the gate's token, a human approves: the ref."""
        operator = self.operator()
        status, requested = self.r.host("POST", "/host/confirmations", operator, {
            "workspace_id": self.workspace, "capability": capability,
            "principal": PRINCIPAL, "arguments": arguments, "ttl_seconds": 120})
        assert status in (200, 201), requested
        ref = str(requested["elicitationRef"])
        assert self.r.feed_notifier() >= 1
        status, decided = self.r.host("POST", f"/host/confirmations/{ref}/decision", operator,
                                      {"workspace_id": self.workspace, "decision": "approve",
                                       "approver": "rehearsal-approver"})
        assert status == 200, decided
        assert decided["state"] == "approved", decided
        return ref
