"""``POST /host/migrations/mem0`` on moto, through the real host_api, capture and
request_admission handlers (issue 31 item 5): counts, a rerun imports nothing, the ledger
refuses one id with two contents, an agent token is refused, nothing written on a refusal.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.cli.import_mem0 import Report, migrate

from tests.fixtures import mem0_export
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import host_call
from tests.support.events import WORKSPACE_ID

ROUTE = "/host/migrations/mem0"
PURPOSE = "purpose:mem0-import"


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    yield
    bootstrap.reset()


def _post(token: str) -> Any:
    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        status, body = host_call("POST", ROUTE, token, {
            "workspace_id": WORKSPACE_ID, "purpose_ref": PURPOSE, "memories": batch})
        assert status == 200, body
        results: list[dict[str, Any]] = body["results"]
        return results
    return post


def _run(export: object, token: str) -> Report:
    return migrate(io.StringIO(json.dumps(export, ensure_ascii=False)), _post(token))


def _records(gate_env: GateEnv) -> int:
    found = gate_env.dynamodb.query(
        TableName=gate_env.settings.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :rec)",
        ExpressionAttributeValues={
            ":pk": {"S": f"SCOPE#{gate_env.settings.tenant_id}#{WORKSPACE_ID}"},
            ":rec": {"S": "REC#"}}, Select="COUNT")
    return int(found["Count"])


def test_the_fixture_imports_once_with_secrets_refused_and_duplicates_reported(
    gate_env: GateEnv,
) -> None:
    token = gate_env.maintainer_token()
    expected = mem0_export.EXPECTED
    before = _records(gate_env)

    first = _run(mem0_export.wrapped(), token).as_json()
    assert first["imported"] == expected.imported
    assert first["refused_count"] == expected.refused_secret
    assert set(first["refused"]) == {"INVALID_SCHEMA"}
    assert len(first["duplicates"]["same_id"]) == expected.same_id
    assert len(first["duplicates"]["same_content"]) == expected.same_content
    assert _records(gate_env) == before + expected.imported

    second = _run(mem0_export.build(), token).as_json()
    assert second["imported"] == 0
    assert second["already_present"] == expected.imported
    assert _records(gate_env) == before + expected.imported

    conflict = _run(mem0_export.conflicting(), token).as_json()
    assert conflict["refused"] == {"MIGRATION_LEDGER_INVALID": [
        mem0_export.conflicting()[0]["id"]]}
    assert _records(gate_env) == before + expected.imported


def test_an_agent_token_is_refused_and_nothing_is_written(gate_env: GateEnv) -> None:
    before = _records(gate_env)
    body = {"workspace_id": WORKSPACE_ID, "purpose_ref": PURPOSE, "memories": [
        {"id": "agent-attempt-1", "memory": "an agent cannot migrate", "created_at_ms": 1}]}
    status, answer = host_call("POST", ROUTE, gate_env.agent_token(WORKSPACE_ID), body)
    assert status == 403
    assert answer == {"error": {"code": "FORBIDDEN",
                                "message": "The maintain permission is required."}}
    assert _records(gate_env) == before


@pytest.mark.parametrize("body", [
    {"workspace_id": WORKSPACE_ID, "purpose_ref": PURPOSE, "memories": []},
    {"workspace_id": WORKSPACE_ID, "purpose_ref": PURPOSE,
     "memories": [{"id": "x1", "memory": "no time"}]},
    {"workspace_id": WORKSPACE_ID, "purpose_ref": PURPOSE,
     "memories": [{"id": "x1", "memory": "m", "created_at_ms": 1, "hash": "abc"}]},
    {"workspace_id": WORKSPACE_ID, "purpose_ref": PURPOSE, "memories": [
        {"id": f"x{i}", "memory": "m", "created_at_ms": 1} for i in range(11)]},
])
def test_a_malformed_batch_is_the_constant_400(gate_env: GateEnv, body: Any) -> None:
    status, answer = host_call("POST", ROUTE, gate_env.maintainer_token(), body)
    assert status == 400
    assert answer == {"error": {"code": "INVALID_REQUEST",
                                "message": "The request body is invalid."}}
