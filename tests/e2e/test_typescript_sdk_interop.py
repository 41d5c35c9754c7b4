"""The official TypeScript MCP SDK client against the real local service.

The TypeScript SDK's ``client.callTool`` validates ``structuredContent`` against the tool's
published ``outputSchema`` (Ajv) and throws when it does not match, so every success and
failure envelope below has passed that validation; tests/interop/ts/client.mjs reports
each call and exits non-zero on any SDK rejection or protocol error.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from engram_memory.cli import main as cli
from engram_memory.local.service import RunningService

from .conftest import PURPOSE, WORKSPACE
from .ts_support import (
    EXIT_OK,
    ClientRun,
    ensure_installed,
    require_node,
    run_client,
)

CORE = ["search", "get", "capture", "request_admission"]
ALL = [*CORE, "withdraw", "forget"]
SUPPORTED_ERAS = {"2025-11-25", "2025-06-18", "2025-03-26"}


@pytest.fixture(scope="session")
def ts_client() -> None:
    require_node()  # a skip on a developer box, a failure under CI=true
    ensure_installed()


def names(capabilities: list[str]) -> list[str]:
    return [f"engram_memory_{short}" for short in capabilities]


def assert_validated(call: dict[str, Any]) -> None:
    """The SDK validated the envelope, the closed schema bit, and the MCP wrapping holds."""
    assert "protocolError" not in call, call
    assert call["sdkValidated"] is True, call
    assert call["tamperedRejected"] is True, call
    assert call["textEqualsStructured"] is True, call
    assert call["isError"] is (not call["ok"]), call


def journey(service: RunningService, capabilities: list[str]) -> ClientRun:
    # A reference nobody approved: the gated calls reach the gate and answer gate_failed
    # (with no reference at all they are a -32603 protocol refusal, CONTRACT §0).
    token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=capabilities,
                         confirmation_ref="ts-interop-unapproved")
    run = run_client(service.mcp_url, token, PURPOSE)
    assert run.status == EXIT_OK, str(run)
    return run


def confirm(capsys: pytest.CaptureFixture[str], service: RunningService, tool: str,
            arguments: dict[str, Any]) -> str:
    """The host asks the human and the human approves: the elicitationRef to carry."""
    common = ["--data-dir", str(service.home), "--workspace", WORKSPACE]
    capsys.readouterr()
    assert cli.main(["confirm", "request", *common, "--tool", tool,
                             "--arguments", json.dumps(arguments), "--ttl", "60"]) == 0
    ref = str(json.loads(capsys.readouterr().out)["elicitationRef"])
    assert cli.main(["confirm", "approve", ref, *common, "--approver", "alice"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "approved"
    return ref


@pytest.fixture(scope="module")
def core_run(service: RunningService, ts_client: None) -> ClientRun:
    """One journey under the four everyday capabilities, shared by the assertions below."""
    return journey(service, CORE)


def test_the_typescript_sdk_accepts_every_envelope_of_the_agent_journey(
    core_run: ClientRun,
) -> None:
    run = core_run
    report = run.report
    assert report["tools"] == names(CORE)
    assert report["withOutputSchema"] == names(CORE)
    assert report["protocolVersion"] in SUPPORTED_ERAS
    calls = run.calls()
    for call in calls.values():
        assert_validated(call)
    for label in ("capture", "request_admission", "search", "get"):
        assert calls[label]["ok"] is True, calls[label]
    assert calls["capture"]["structuredContent"]["output"]["value"]["status"] == (
        "committed_pending")
    assert report["searchFoundRecord"] is True
    got = calls["get"]["structuredContent"]["output"]["value"]["record"]
    assert got["record_id"] == report["recordId"]


def test_failure_envelopes_pass_the_typescript_sdk_with_is_error_set(
    core_run: ClientRun,
) -> None:
    calls = core_run.calls()
    unknown, extra = calls["get_unknown"], calls["capture_extra_field"]
    for call, code in ((unknown, "NOT_FOUND"), (extra, "INVALID_SCHEMA")):
        assert_validated(call)
        assert call["isError"] is True
        assert call["code"] == code
        assert call["retriable"] is False
        assert set(call["structuredContent"]) == {"ok", "auditId", "redactionClass", "error"}
    # The published inputSchema is closed too: a schema-validating client refuses it early.
    assert extra["inputSchemaAccepts"] is False
    assert calls["capture"]["inputSchemaAccepts"] is True


@pytest.mark.usefixtures("ts_client")
def test_confirmation_gated_tools_validate_refused_and_then_confirmed(
    service: RunningService, capsys: pytest.CaptureFixture[str],
) -> None:
    run = journey(service, ALL)
    assert run.report["withOutputSchema"] == names(ALL)
    calls = run.calls()
    for label in ("withdraw_unconfirmed", "forget_unconfirmed"):
        assert_validated(calls[label])
        assert calls[label]["code"] == "gate_failed"

    targets = {
        "withdraw": ("candidate_id", run.report["pendingCandidateId"], "withdrawn"),
        "forget": ("record_id", run.report["recordId"], "tombstoned"),
    }
    for tool, (field, target, to_state) in targets.items():
        arguments = {field: target, "idempotency_key": f"ts-interop-{tool}-{secrets.token_hex(8)}",
                     "reason_ref": "reason:owner-request"}
        ref = confirm(capsys, service, tool, arguments)
        token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=ALL,
                             confirmation_ref=ref)
        confirmed = run_client(service.mcp_url, token, PURPOSE,
                               {"label": tool, "tool": tool, "arguments": arguments})
        assert confirmed.status == EXIT_OK, str(confirmed)
        call = confirmed.calls()[tool]
        assert_validated(call)
        assert call["structuredContent"]["output"]["value"]["receipt"]["to_state"] == to_state


@pytest.mark.usefixtures("ts_client")
def test_a_tool_outside_the_token_capabilities_is_neither_listed_nor_callable(
    service: RunningService,
) -> None:
    token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=["search", "get"])
    refused = run_client(service.mcp_url, token, PURPOSE, {
        "label": "capture", "tool": "capture", "arguments": {}, "expect": -32602})
    assert refused.status == EXIT_OK, str(refused)
    assert refused.report["tools"] == names(["search", "get"])
    call = refused.calls()["capture"]
    assert call["protocolError"]["code"] == -32602
    assert call["schemaRejected"] is False
