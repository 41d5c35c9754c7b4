"""``POST /host/migrations/mem0`` on moto, through the real host_api, capture and
request_admission handlers (issue 31 item 5): counts, a rerun imports nothing, the ledger
refuses one id with two contents, a request that runs short of time defers and the client
resends, a lost answer is retried without a double write, an interrupted run resumes,
agent and uncovered tokens are refused, nothing is written on a refusal.

Nothing here depends on how fast the machine is: the time a request has left comes from the
Lambda context the test hands the handler.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import IO, Any

import pytest
from engram_memory import bootstrap
from engram_memory.adapters.stepfunctions.clients import gate_clients
from engram_memory.cli import import_mem0
from engram_memory.cli.import_mem0 import Report, migrate
from engram_memory.composition import host_api
from engram_memory.composition.host_api import build_host_api
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import MutationOutcomeUnknown
from engram_memory.gate.migration import MAX_BATCH
from engram_memory.local.inprocess_invoker import (
    InProcessInvoker,
    LocalLambdaContext,
    default_functions_dir,
)

from functions.host_api.handler import lambda_handler
from tests.fixtures import mem0_export
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import host_call, host_event
from tests.support.events import WORKSPACE_ID

ROUTE = "/host/migrations/mem0"
PURPOSE = "purpose:mem0-import"
Post = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    # The time left is the last handler call's context: start each test with a full one.
    host_api.DEADLINE.bind(LocalLambdaContext("engram-host-api").get_remaining_time_in_millis)
    yield
    bootstrap.reset()


class ShortOnTime(LocalLambdaContext):
    """A host API invocation that has 10 s left whenever asked: room for one memory."""

    def get_remaining_time_in_millis(self) -> int:
        """Always short."""
        return 10_000


def _body(batch: list[dict[str, Any]]) -> dict[str, Any]:
    return {"workspace_id": WORKSPACE_ID, "purpose_ref": PURPOSE, "memories": batch}


def _results(status: int, body: dict[str, Any], log: list[list[str]]) -> list[dict[str, Any]]:
    assert status == 200, body
    results: list[dict[str, Any]] = body["results"]
    log.append([str(r["status"]) for r in results])
    return results


def _post(token: str, log: list[list[str]] | None = None) -> Post:
    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        status, body = host_call("POST", ROUTE, token, _body(batch))
        return _results(status, body, log if log is not None else [])
    return post


def _file(export: object) -> Callable[[], IO[str]]:
    text = json.dumps(export, ensure_ascii=False)
    return lambda: io.StringIO(text)


def _run(export: object, post: Post) -> dict[str, Any]:
    # The command's own backoff between requests that settle nothing (a contended fence,
    # FENCE_LOST, needs a moment to clear); it paces the retries, it decides nothing.
    report: Report = migrate(_file(export), post)
    return report.as_json()


def _records(gate_env: GateEnv) -> int:
    found = gate_env.dynamodb.query(
        TableName=gate_env.settings.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :rec)",
        ExpressionAttributeValues={
            ":pk": {"S": f"SCOPE#{gate_env.settings.tenant_id}#{WORKSPACE_ID}"},
            ":rec": {"S": "REC#"}}, Select="COUNT")
    return int(found["Count"])


def _fresh(prefix: str, count: int) -> list[dict[str, Any]]:
    """``count`` memories of their own (ids and texts no other test uses)."""
    return [mem0_export.memory(n, text=f"{prefix} memory number {n}", mem_id=f"{prefix}-{n}")
            for n in range(count)]


SUBSET = 21
"""Memories of the fixture this tier migrates: the first 21 hold its credentials, its
unicode texts and every memory a repeat repeats (two function invocations each on moto as
it ships, whose TransactWriteItems copies the table: the e2e tier migrates the whole
fixture on the local service)."""


def _subset() -> list[dict[str, Any]]:
    every = mem0_export.build()
    return every[:SUBSET] + every[mem0_export.DISTINCT:]


def test_the_fixture_imports_once_with_secrets_refused_and_duplicates_reported(
    gate_env: GateEnv,
) -> None:
    token = gate_env.maintainer_token()
    expected = mem0_export.EXPECTED
    imported = SUBSET - expected.refused_secret
    before = _records(gate_env)

    first = _run({"results": _subset(), "relations": []}, _post(token))
    # A write whose answer was lost (MUTATION_OUTCOME_UNKNOWN: the shared moto server does
    # answer 500 under load) is sent again and replayed: counted already_present, once.
    assert first["imported"] + first["already_present"] == imported
    assert first["refused_count"] == expected.refused_secret
    assert set(first["refused"]) == {"INVALID_SCHEMA"}
    assert len(first["duplicates"]["same_id"]) == expected.same_id
    assert len(first["duplicates"]["same_content"]) == expected.same_content
    assert first["unfinished"] == []
    assert _records(gate_env) == before + imported

    second = _run(_subset(), _post(token))
    assert second["imported"] == 0
    assert second["already_present"] == imported
    assert _records(gate_env) == before + imported

    conflict = _run(mem0_export.conflicting(), _post(token))
    assert conflict["refused"] == {"MIGRATION_LEDGER_INVALID": [
        mem0_export.conflicting()[0]["id"]]}
    assert _records(gate_env) == before + imported


def test_a_request_short_of_time_does_one_memory_and_defers_the_rest(gate_env: GateEnv) -> None:
    token = gate_env.maintainer_token()
    export = _fresh("short", 6)
    before = _records(gate_env)
    answers: list[list[str]] = []

    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        response = lambda_handler(host_event("POST", ROUTE, token, _body(batch)),
                                  ShortOnTime("engram-host-api"))
        return _results(int(response["statusCode"]), json.loads(response["body"]), answers)

    report = _run(export, post)
    assert report["imported"] + report["already_present"] == len(export)
    for answer in answers:  # one memory tried per request, the rest sent again
        assert answer[1:] == ["deferred"] * (len(answer) - 1)
    assert answers[0][0] in ("imported", "retry")
    assert _records(gate_env) == before + len(export)


class LosesOneAnswer:
    """The in-process functions; the first admission of ``mem0_id`` commits, then its answer
    is lost on the way back (as a timed-out lambda:Invoke would be)."""

    def __init__(self, mem0_id: str) -> None:
        self.inner = InProcessInvoker(default_functions_dir())
        self.key = "migration:mem0:admit:" + mem0_id
        self.lost = False

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        """Run the real handler; lose one answer."""
        answer = self.inner.invoke(tool, invocation)
        if (tool is Tool.REQUEST_ADMISSION and not self.lost
                and invocation["arguments"]["idempotency_key"] == self.key):
            self.lost = True
            raise MutationOutcomeUnknown
        return answer


def test_a_lost_answer_is_retried_and_the_memory_is_written_once(gate_env: GateEnv) -> None:
    token = gate_env.maintainer_token()
    export = _fresh("lost", 5)
    invoker = LosesOneAnswer(export[2]["id"])
    settings = gate_env.settings
    api = build_host_api(settings, gate_clients(settings), invoker, migrations=invoker)
    before = _records(gate_env)
    answers: list[list[str]] = []

    def post(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        response = api.handle(host_event("POST", ROUTE, token, _body(batch)))
        return _results(int(response["statusCode"]), json.loads(response["body"]), answers)

    report = _run(export, post)
    assert answers[0][2:] == ["retry", "deferred", "deferred"]
    # Sent again: the admission the lost answer hid is replayed from the ledger.
    assert report["already_present"] >= 1
    assert report["imported"] + report["already_present"] == len(export)
    assert _records(gate_env) == before + len(export)


def test_an_interrupted_run_resumes_and_imports_nothing_twice(
    gate_env: GateEnv, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The command's batches of 4 instead of MAX_BATCH: one batch going through before the
    # interruption is the case, whatever its size (the route's own cap is tested above).
    monkeypatch.setattr(import_mem0, "MAX_BATCH", 4)
    token = gate_env.maintainer_token()
    export = _fresh("resume", 4 + 3)
    before = _records(gate_env)
    send = _post(token)

    def killed_after_the_first_batch(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(calls) == 1:
            raise KeyboardInterrupt  # the operator's Ctrl-C, after one batch went through
        calls.append(len(batch))
        return send(batch)

    calls: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        _run(export, killed_after_the_first_batch)
    interrupted = _records(gate_env) - before
    assert interrupted <= 4  # at most the one batch that went through

    resumed = _run(export, send)
    assert resumed["already_present"] >= interrupted
    assert resumed["imported"] + resumed["already_present"] == len(export)
    assert _records(gate_env) == before + len(export)


@pytest.mark.parametrize("who", ["agent", "other_workspace"])
def test_an_agent_or_uncovered_token_is_refused_and_nothing_is_written(
    gate_env: GateEnv, who: str,
) -> None:
    token = (gate_env.agent_token(WORKSPACE_ID) if who == "agent"
             else gate_env.maintainer_token(workspaces=["ws-elsewhere"]))
    before = _records(gate_env)
    status, answer = host_call("POST", ROUTE, token, _body([
        {"id": "refused-attempt-1", "memory": "may not migrate", "created_at_ms": 1}]))
    assert status == 403
    assert answer == {"error": {"code": "FORBIDDEN",
                                "message": "The maintain permission is required."}}
    assert _records(gate_env) == before


@pytest.mark.parametrize("body", [
    _body([]),
    _body([{"id": "x1", "memory": "no time"}]),
    _body([{"id": "x1", "memory": "m", "created_at_ms": 1, "hash": "abc"}]),
    _body([{"id": f"x{i}", "memory": "m", "created_at_ms": 1} for i in range(MAX_BATCH + 1)]),
])
def test_a_malformed_batch_is_the_constant_400(gate_env: GateEnv, body: Any) -> None:
    status, answer = host_call("POST", ROUTE, gate_env.maintainer_token(), body)
    assert status == 400
    assert answer == {"error": {"code": "INVALID_REQUEST",
                                "message": "The request body is invalid."}}
