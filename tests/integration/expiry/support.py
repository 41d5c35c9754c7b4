"""Helpers for the expiry sweeper tests: admit records with a retention, run the sweeper."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engram_memory import bootstrap
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.instant import format_instant
from engram_memory.domain.journal import JournalEvent
from engram_memory.local.inprocess_invoker import LocalLambdaContext
from engram_memory.local.projector_pump import drain

from functions.expiry_sweeper.handler import lambda_handler as sweeper_handler
from functions.get.handler import lambda_handler as get_handler
from functions.search.handler import lambda_handler as search_handler
from tests.fixtures.contract_fixtures import PURPOSE_REF, VALID_T_MS, valid_capture_args
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    ApprovalGate,
    FixedClock,
    admit,
    call,
    forget_args,
    install_approval_gate,
    op_digest,
    value,
)
from tests.support.events import TENANT_ID, WORKSPACE_ID, make_event

HOUR_MS = 3600 * 1000
START_MS = VALID_T_MS + 30 * 24 * HOUR_MS  # inside every fixture record's valid time
SCOPE = Scope(TENANT_ID, WORKSPACE_ID)
SCOPE_PK = f"SCOPE#{TENANT_ID}#{WORKSPACE_ID}"
SCHEDULED_EVENT: dict[str, Any] = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-02-01T00:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/engram-expiry-sweeper"],
    "detail": {},
}


@dataclass
class Expiry:
    """Drives one mocked tenant: capture + admit through the handlers, sweep, read back."""

    aws: AwsEnv
    clock: FixedClock
    gate: ApprovalGate
    counter: int = 0
    texts: list[str] = field(default_factory=list)

    def admit(self, text: str, *, expires_in_ms: int | None = None, rule: str | None = None,
              workspace_id: str = WORKSPACE_ID, extra_components: int = 0) -> str:
        """Capture + admit a record (optionally expiring) now; its record id."""
        self.counter += 1
        args = valid_capture_args(text=text, idempotency_key=f"expiry-capture-{self.counter:04d}")
        if expires_in_ms is not None or rule is not None:
            retention: dict[str, Any] = {"derivative_rule": rule or "make-ineligible"}
            if expires_in_ms is not None:
                retention["expires_at"] = format_instant(self.clock.now + expires_in_ms)
            args["payload"]["retention"] = retention
        _add_large_components(args["payload"], extra_components)
        self.texts.append(text)
        captured = value(call(Tool.CAPTURE, args, workspace_id=workspace_id))
        outcome = value(admit(captured["candidate_id"], key=f"expiry-admit-{self.counter:04d}",
                              workspace_id=workspace_id))["outcome"]
        assert outcome["status"] == "accepted", outcome
        return str(outcome["record_id"])

    def sweep(self, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run the sweeper Lambda handler once; its result (JSON round-tripped)."""
        result = sweeper_handler(SCHEDULED_EVENT if event is None else event,
                                 LocalLambdaContext(function_name="expiry_sweeper"))
        return dict(json.loads(json.dumps(result)))

    def record_item(self, record_id: str, workspace_id: str = WORKSPACE_ID) -> dict[str, Any]:
        """The raw main-table record item."""
        return dict(self.aws.dynamodb.get_item(
            TableName=self.aws.settings.table_name, ConsistentRead=True,
            Key={"pk": {"S": f"SCOPE#{TENANT_ID}#{workspace_id}"},
                 "sk": {"S": f"REC#{record_id}"}})["Item"])

    def index_items(self, workspace_id: str = WORKSPACE_ID) -> list[dict[str, Any]]:
        """The scope's expiry index entries."""
        return [item for item in self.aws.scan(self.aws.settings.table_name)
                if item["pk"]["S"] == f"EXPIRY#{TENANT_ID}#{workspace_id}"]

    def journal(self, scope: Scope = SCOPE) -> list[JournalEvent]:
        """Every journal event of the scope, in cursor order."""
        return bootstrap.store().journal_events(scope)

    def project(self) -> int:
        """Drain the main table's stream into the projector handler."""
        return drain(self.aws.settings)

    def search(self, query: str) -> list[str]:
        """Record ids engram_memory_search returns for ``query``."""
        envelope = search_handler(make_event(Tool.SEARCH, {"query": query,
                                                           "purpose_ref": PURPOSE_REF}),
                                  LocalLambdaContext(function_name="search"))
        assert envelope["ok"], envelope
        return [packet["record"]["record_id"]
                for packet in envelope["output"]["value"]["records"]]

    def get(self, record_id: str) -> dict[str, Any]:
        """The engram_memory_get envelope."""
        return dict(get_handler(make_event(Tool.GET, {"record_id": record_id,
                                                      "purpose_ref": PURPOSE_REF}),
                                    LocalLambdaContext(function_name="get")))

    def forget(self, record_id: str, key: str = "expiry-forget-key-0001") -> dict[str, Any]:
        """Forget with a human approval recorded for exactly this call; the value."""
        args = forget_args(record_id, key=key)
        ref = f"ref-{key}"
        self.gate.approve(self.aws.dynamodb, ref, Tool.FORGET, record_id,
                          op_digest(Tool.FORGET, args))
        return value(call(Tool.FORGET, args, confirmation_ref=ref))


def _add_large_components(payload: dict[str, Any], count: int) -> None:
    """Make the record large (over the inline limit) so it is stored in parts."""
    for index in range(count):
        words = " ".join(f"filler{index}w{n}" for n in range(6000))[:60_000]
        payload["components"].append({"component_id": f"c-bulk-{index}", "kind": "context",
                                      "text": words, "citation_ids": ["cit-runbook"]})


def wire(aws: AwsEnv) -> Expiry:
    """Pin the clock and install the test approval gate on the composition root."""
    clock = FixedClock(START_MS)
    bootstrap.override(clock=clock)
    gate = install_approval_gate(aws.settings.table_name)
    return Expiry(aws=aws, clock=clock, gate=gate)
