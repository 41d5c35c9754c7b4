"""Export and restore on the stack as synthesized: the host API under exactly its role.

``engram-memory export`` and ``engram-memory import`` run against the stack's HTTP API
(the loopback adapter in front of the host API function, which runs with its own role's
credentials and IAM enforced). The workspace holds a current record, a historical one, one
forgotten before the export and one forgotten after it; the restore into the empty second
workspace must leave the first two readable by get and found by search there, and neither
forgotten one (the missing-grant case: test_backup_missing_grant.py).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from engram_memory.adapters.dynamodb import items as it
from engram_memory.backup.bundle import verify_file
from engram_memory.cli.main import main as cli
from engram_memory.domain.context import Scope

from tests.rehearsal.flow import BOTH, PURPOSE, Flow, value
from tests.rehearsal.harness import Rehearsal
from tests.rehearsal.http_adapter import serving

pytestmark = pytest.mark.timeout(900)


def _forget(flow: Flow, record_id: str) -> None:
    forget = {"record_id": record_id, "reason_ref": "reason:owner-request",
              "idempotency_key": "rehearsal-forget-" + secrets.token_hex(8)}
    ref = flow.approved_confirmation("forget", forget)
    done = value(flow.call("forget", forget, confirmation_ref=ref))
    assert done["receipt"]["to_state"] == "tombstoned", done


def _make_historical(rehearsal: Rehearsal, flow: Flow, record_id: str) -> None:
    """No tool supersedes a record today: the operator's write stands in for that move."""
    main = rehearsal.physical("AWS::DynamoDB::Table", "MainTable")
    scope = Scope(rehearsal.synthesized.tenant, flow.workspace)
    rehearsal.client("dynamodb").update_item(
        TableName=main, Key=it.key(it.scope_pk(scope), it.record_sk(record_id)),
        UpdateExpression="SET #s = :h", ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":h": it.s("historical")})


def _state(rehearsal: Rehearsal, workspace: str, record_id: str) -> str | None:
    main = rehearsal.physical("AWS::DynamoDB::Table", "MainTable")
    scope = Scope(rehearsal.synthesized.tenant, workspace)
    item = rehearsal.client("dynamodb").get_item(
        TableName=main, Key=it.key(it.scope_pk(scope), it.record_sk(record_id)),
        ConsistentRead=True).get("Item")
    return None if item is None else str(item["state"]["S"])


def _target(rehearsal: Rehearsal) -> Flow:
    target = Flow(rehearsal)
    target.workspace = rehearsal.synthesized.workspaces[1]
    return target


def _get(flow: Flow, record_id: str) -> dict[str, Any]:
    return flow.call("get", {"record_id": record_id, "purpose_ref": PURPOSE})


def test_export_then_restore_into_an_empty_workspace_under_the_host_api_role(
        rehearsal: Rehearsal, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, target = Flow(rehearsal), _target(rehearsal)
    marker = "quokka" + secrets.token_hex(3)
    current = source.admit_by_host(source.capture(
        f"The invoice exports run nightly at two ({marker} current)."))
    historical = source.admit_by_host(source.capture(
        f"The invoice exports used to run hourly ({marker} historical)."))
    forgotten_before = source.admit_by_host(source.capture(
        f"The invoice export password rotation owner ({marker} before)."))
    forgotten_after = source.admit_by_host(source.capture(
        f"The invoice export bucket owner ({marker} after)."))
    _make_historical(rehearsal, source, historical)
    _forget(source, forgotten_before)
    rehearsal.feed_projector()

    bundle = tmp_path / "default.bundle"
    token = source.operator()
    with serving(rehearsal) as base:
        assert cli(["export", "--url", base, "--workspace", source.workspace,
                    "--out", str(bundle), "--token", token]) == 0
        summary = verify_file(str(bundle))
        assert summary.counts["records"] == 3  # current, historical, forgotten_after
        assert summary.counts["tombstones"] == 1  # forgotten_before's guard, no content
        _forget(source, forgotten_after)
        capsys.readouterr()
        assert cli(["import", "--url", base, "--workspace", target.workspace, str(bundle),
                    "--token", source.operator()]) == 0
    printed = capsys.readouterr().out
    assert "restored 2 records" in printed, printed
    assert f"skipped 1 records forgotten since the bundle: {forgotten_after}" in printed
    rehearsal.feed_projector()
    assert rehearsal.denials == []

    for record_id in (current, historical):
        # The record itself (id, digest, content); the audit id and read cursor differ.
        got, want = _get(target, record_id), _get(source, record_id)
        assert got["ok"] == want["ok"], (got, want)
        if want["ok"]:
            assert value(got)["record"] == value(want)["record"]
    assert value(_get(target, current))["record"]["record_id"] == current
    assert _state(rehearsal, target.workspace, historical) == "historical"
    assert _state(rehearsal, target.workspace, current) == "accepted_current"
    for record_id in (forgotten_before, forgotten_after):
        assert _get(target, record_id)["error"]["code"] == "NOT_FOUND"
        assert _state(rehearsal, target.workspace, record_id) is None
    for policy in ({}, {"capability_policy": BOTH}):
        found = target.search(f"invoice exports nightly {marker}", **policy)
        assert current in found, policy
        assert forgotten_before not in found
        assert forgotten_after not in found
        assert set(target.search(marker, **policy)) == set(source.search(marker, **policy))
    assert rehearsal.denials == []

