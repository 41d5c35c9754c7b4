"""Issue 31 on the local service: 1,000 records out with `engram-memory export`, checked with
`verify`, back in with `import` into an empty workspace, equal where a user looks.

The few records whose admission matters (expiring with ``retain``) go in through the
capture and request_admission tool handlers in process (as tests/e2e/test_write_burst.py
and bench/harness.Bench.direct call them); the other ~990 are planted in bulk with the
write path's own item mapping and chained accept events (tests/support/bulk_records.py:
a tool call pair costs ~0.25 s on the moto server, 1,000 of them minutes). Either way the
main table's stream feeds the service's own pump and the real projector
(lexical postings and, with the committed ONNX model, vectors). Some are forgotten (a human
approval recorded, then the forget handler), one of them after the bundle was taken; some
expire with ``retain`` (the sweeper handler, as the local schedule runs it); one candidate
stays pending and one is withdrawn. No tool moves a record to ``accepted_disputed`` or
``historical`` yet (docs/expiry.md: only expiry and forget are transitions today), so a few
records are put in those states directly in the main table, as such a transition would
leave them, to show the bundle keeps every restorable state.

The commands run in this process against the service's HTTP host routes. Runtime on the
shared 2-core box: see docs/backup.md ("Status").
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.projection_store import space
from engram_memory.backup.bundle import read_lines
from engram_memory.cli import main as cli
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.instant import format_instant
from engram_memory.local.expiry_schedule import scheduled_event
from engram_memory.local.inprocess_invoker import (
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.service import RunningService

from tests.fixtures.contract_fixtures import (
    valid_capture_args,
    valid_forget_args,
    valid_withdraw_args,
)
from tests.support import bulk_records
from tests.support.confirmations import approved_item
from tests.support.events import make_event

from .conftest import PURPOSE, TENANT
from .test_host_routes import maintainer

SOURCE, TARGET = "bk-src", "bk-dst"
# 100 in CI (its time limit); the 1,000: ENGRAM_BACKUP_E2E_RECORDS=1000 (docs/backup.md).
RECORDS = int(os.environ.get("ENGRAM_BACKUP_E2E_RECORDS", "100"))
FORGOTTEN, EXPIRING, DISPUTED, HISTORICAL = 12, 8, 5, 5
PRINCIPAL = "user:importer"
HYBRID = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}
EXPIRY_DELAY_MS = 8_000  # the expiring records' expires_at, after their capture
PROJECTION_WAIT_S = 900.0  # a bound, not a expectation: the pump usually keeps up in seconds
TOPICS = ("billing", "latency", "database", "backup", "kubernetes", "invoice", "search",
          "deploy", "queue", "cache", "login", "payments", "storage", "alerts", "dns")
ACTIONS = ("retries", "rotates", "throttles", "replicates", "archives", "pages", "shards",
           "compresses", "migrates", "verifies")
OBJECTS = ("the nightly job", "every tenant", "the primary region", "cold snapshots",
           "the audit trail", "stale sessions", "the error budget", "large uploads")
SAMPLE_EVERY = 10  # get in W too for every tenth record (and every one not current)
MARKER = "zebrafinch"  # only in the pending and withdrawn candidates' content


def _text(n: int, rng: random.Random) -> str:
    topic, other = rng.sample(TOPICS, 2)
    return (f"Note {n}: the {topic} service {rng.choice(ACTIONS)} {rng.choice(OBJECTS)}; "
            f"see the {other} runbook, step {n % 17}.")


def _queries() -> list[str]:
    rng = random.Random(31)
    return [f"{rng.choice(TOPICS)} {rng.choice(ACTIONS)}" if i % 2 else
            f"how does {rng.choice(TOPICS)} handle {rng.choice(OBJECTS)}" for i in range(50)]


def _call(tool: Tool, workspace: str, args: dict[str, Any], **ctx: Any) -> dict[str, Any]:
    handler = load_handler(default_functions_dir(), tool.value)
    assert handler is not None
    event = make_event(tool, args, tenant_id=TENANT, workspace_id=workspace,
                       purpose_ref=PURPOSE, principal=PRINCIPAL, **ctx)
    envelope: dict[str, Any] = handler(json.loads(json.dumps(event)),
                                       LocalLambdaContext(tool.value))
    return envelope


def _capture(n: int, text: str, retention: dict[str, Any] | None = None) -> str:
    args = valid_capture_args(text=text, decision_text=text, purpose_ref=PURPOSE,
                              idempotency_key=f"backup-capture-{n:06d}")
    if retention is not None:
        args["payload"]["retention"] = retention
    captured = _call(Tool.CAPTURE, SOURCE, args)
    assert captured["ok"], captured
    return str(captured["output"]["value"]["candidate_id"])


def _admit(n: int, text: str, retention: dict[str, Any] | None = None) -> str:
    admitted = _call(Tool.REQUEST_ADMISSION, SOURCE, {
        "candidate_id": _capture(n, text, retention),
        "idempotency_key": f"backup-admission-{n:06d}"})
    assert admitted["ok"], admitted
    assert admitted["output"]["value"]["outcome"]["status"] == "accepted"
    return str(admitted["output"]["value"]["outcome"]["record_id"])


def _approve(service: RunningService, tool: Tool, args: dict[str, Any], ref: str) -> None:
    """Record the human approval a gated tool needs (tests/support/confirmations.py)."""
    bootstrap.dynamodb_client().put_item(
        TableName=service.settings.table_name,
        Item=approved_item(Scope(TENANT, SOURCE), ref, tool, args, principal=PRINCIPAL,
                           now_ms=int(time.time() * 1000)))


def _forget(service: RunningService, record_id: str) -> None:
    args = valid_forget_args(record_id=record_id, idempotency_key=f"backup-forget-{record_id}")
    ref = f"backup-approval-{record_id}"
    _approve(service, Tool.FORGET, args, ref)
    forgotten = _call(Tool.FORGET, SOURCE, args, confirmation_ref=ref)
    assert forgotten["ok"], forgotten


def _withdraw(service: RunningService, candidate_id: str) -> None:
    args = valid_withdraw_args(candidate_id=candidate_id,
                               idempotency_key="backup-withdraw-000001")
    _approve(service, Tool.WITHDRAW, args, "backup-approval-withdraw")
    withdrawn = _call(Tool.WITHDRAW, SOURCE, args, confirmation_ref="backup-approval-withdraw")
    assert withdrawn["ok"], withdrawn


def _set_state(service: RunningService, record_id: str, state: str) -> None:
    bootstrap.dynamodb_client().update_item(
        TableName=service.settings.table_name,
        Key={"pk": {"S": f"SCOPE#{TENANT}#{SOURCE}"}, "sk": {"S": f"REC#{record_id}"}},
        UpdateExpression="SET #s = :s", ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":s": {"S": state}})


def _items(service: RunningService, workspace: str, prefix: str) -> list[dict[str, Any]]:
    client = bootstrap.dynamodb_client()
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": service.settings.table_name, "ConsistentRead": True, "Limit": 100,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": f"{prefix}#{TENANT}#{workspace}"}}}
    while True:
        page = client.query(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _caught_up(service: RunningService, workspace: str) -> bool:
    """The projector has applied every event of the workspace's journal."""
    scope = Scope(TENANT, workspace)
    client = bootstrap.dynamodb_client()
    head = client.get_item(TableName=service.settings.table_name, ConsistentRead=True, Key={
        "pk": {"S": f"JOURNAL#{scope.key}"}, "sk": {"S": "HEAD"}}).get("Item", {})
    stats = client.get_item(TableName=service.settings.projection_table_name,
                            ConsistentRead=True, Key={"pk": {"S": f"STATS#{space(scope)}"},
                                                      "sk": {"S": "STATS"}}).get("Item", {})
    return int(head.get("cursor", {"N": "0"})["N"]) <= int(stats.get("wm", {"N": "-1"})["N"])


def _search(workspace: str, query: str, hybrid: bool) -> list[str]:
    args: dict[str, Any] = {"query": query, "purpose_ref": PURPOSE, "limit": 10}
    if hybrid:
        args["capability_policy"] = HYBRID
    envelope = _call(Tool.SEARCH, workspace, args)
    assert envelope["ok"], envelope
    return [p["record"]["record_id"] for p in envelope["output"]["value"]["records"]]


def _rankings(workspace: str) -> dict[tuple[str, bool], list[str]]:
    return {(q, hybrid): _search(workspace, q, hybrid)
            for q in _queries() for hybrid in (False, True)}


def _get(workspace: str, record_id: str) -> dict[str, Any]:
    return _call(Tool.GET, workspace, {"record_id": record_id, "purpose_ref": PURPOSE})


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _wait(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + PROJECTION_WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def _plant(service: RunningService) -> dict[str, list[str]]:
    """RECORDS admitted records: the expiring ones through the tools, the rest in bulk;
    then the forgotten, disputed and historical ones, a pending and a withdrawn candidate,
    and the expiry sweep."""
    rng = random.Random(1031)
    texts = [_text(n, rng) for n in range(RECORDS)]
    expires_at_ms = int(time.time() * 1000) + EXPIRY_DELAY_MS
    retain = {"derivative_rule": "retain", "expires_at": format_instant(expires_at_ms)}
    expiring = [_admit(n, texts[n], retain) for n in range(EXPIRING)]
    plain = bulk_records.plant(
        bootstrap.dynamodb_client(), service.settings, Scope(TENANT, SOURCE),
        (bulk_records.effective(valid_capture_args(
            text=texts[n], decision_text=texts[n], purpose_ref=PURPOSE))
         for n in range(EXPIRING, RECORDS)))
    _capture(RECORDS, f"Pending note: the {MARKER} never leaves a workspace.")
    _withdraw(service, _capture(RECORDS + 1, f"Withdrawn note: the {MARKER} was a mistake."))
    groups = {"expiring": expiring,
              "forgotten": plain[0:FORGOTTEN],
              "disputed": plain[FORGOTTEN:FORGOTTEN + DISPUTED],
              "historical": plain[FORGOTTEN + DISPUTED:FORGOTTEN + DISPUTED + HISTORICAL],
              "all": expiring + plain}
    for record_id in groups["forgotten"][1:]:
        _forget(service, record_id)
    for name, state in (("disputed", "accepted_disputed"), ("historical", "historical")):
        for record_id in groups[name]:
            _set_state(service, record_id, state)
    time.sleep(max(0.0, expires_at_ms / 1000 + 1 - time.time()))
    sweeper = load_handler(default_functions_dir(), "expiry_sweeper")
    assert sweeper is not None
    sweeper(scheduled_event(service.settings.region), LocalLambdaContext("expiry_sweeper"))
    return groups


class Phases:
    """Wall time of each phase, printed at the end (the runtime docs/backup.md quotes)."""

    def __init__(self) -> None:
        self.started = self.last = time.monotonic()
        self.laps: list[str] = []

    def lap(self, name: str) -> None:
        """Close the phase ``name``."""
        now = time.monotonic()
        self.laps.append(f"{name} {now - self.last:.1f} s")
        self.last = now

    def __str__(self) -> str:
        return ", ".join([*self.laps, f"total {time.monotonic() - self.started:.1f} s"])


def _record_items(service: RunningService, workspace: str) -> dict[str, dict[str, Any]]:
    return {item["sk"]["S"][4:]: item for item in _items(service, workspace, "SCOPE")
            if item["sk"]["S"].startswith("REC#")}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_workspace_exported_verified_and_restored_reads_the_same(
    service: RunningService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENGRAM_RETAIN_ALLOWED", "true")  # the host permits `retain` here
    bootstrap.reset()
    clock = Phases()
    groups = _plant(service)
    clock.lap("plant")
    # Neither export nor import waits for the projector (they read and write the main
    # table): W's projection runs beside them and beside the gets; only search waits.

    token = maintainer(service)
    bundle = tmp_path / "w.bundle"
    status, out, err = _cli(capsys, "export", "--url", service.base_url, "--workspace", SOURCE,
                            "--out", str(bundle), "--token", token)
    assert status == 0, err
    clock.lap("export")
    status, out, err = _cli(capsys, "verify", str(bundle))
    assert status == 0, err
    clock.lap("verify")
    bundle_digest = out.split("bundle digest ")[1].split()[0]
    lines = [json.loads(raw) for raw in read_lines(bundle.open("rb"))]
    states = sorted(line["state"] for line in lines if line["kind"] == "record")
    kept = RECORDS - (FORGOTTEN - 1)
    assert len(states) == kept
    assert states.count("expired") == EXPIRING
    assert states.count("accepted_disputed") == DISPUTED
    assert states.count("historical") == HISTORICAL
    assert MARKER.encode() not in bundle.read_bytes()

    forgotten_after = groups["forgotten"][0]
    _forget(service, forgotten_after)  # after the bundle: must not come back
    status, out, err = _cli(capsys, "import", "--url", service.base_url, "--workspace", TARGET,
                            str(bundle), "--token", token)
    assert status == 0, err
    assert f"restored {kept - 1} records" in out
    assert f"skipped 1 records forgotten since the bundle: {forgotten_after}" in out
    clock.lap("import")

    journal = [json.loads(item["event"]["S"]) for item in _items(service, TARGET, "JOURNAL")
               if item["sk"]["S"].startswith("EV#")]
    assert [event["operation"] for event in journal] == ["restore"]
    assert journal[0]["digests"]["bundle_digest"] == bundle_digest

    source_items, target_items = (_record_items(service, w) for w in (SOURCE, TARGET))
    assert set(target_items) == set(groups["all"]) - set(groups["forgotten"])
    for record_id in groups["forgotten"]:
        assert "record_json" not in source_items[record_id]
    for record_id, target in target_items.items():
        for field in ("record_id", "record_digest", "payload_digest", "state", "record_json"):
            assert target.get(field) == source_items[record_id].get(field), (record_id, field)
    assert not any(MARKER in json.dumps(item) for item in _items(service, TARGET, "SCOPE"))
    # get in W2 for every record: the content W holds (its stored view, as get hands it out
    # unredacted); get in W for a sample and every record not current, for the same answers.
    current = {r for r, item in source_items.items() if item["state"]["S"] == "accepted_current"}
    sampled = set(groups["all"][::SAMPLE_EVERY]) | (set(groups["all"]) - current)
    for record_id in groups["all"]:
        target = _get(TARGET, record_id)
        assert target["ok"] == (record_id in current), (record_id, target)
        if target["ok"]:
            assert target["output"]["value"]["redacted_fields"] == []
            assert target["output"]["value"]["record"] == json.loads(
                source_items[record_id]["record_json"]["S"]), record_id
        else:
            assert target["error"]["code"] == "NOT_FOUND", record_id
        if record_id in sampled:
            source = _get(SOURCE, record_id)
            assert source["ok"] == target["ok"], record_id
            if source["ok"]:
                assert target["output"]["value"]["record"] == source["output"]["value"]["record"]
    clock.lap("compare gets")

    _wait(lambda: _caught_up(service, SOURCE) and _caught_up(service, TARGET),
          "the projector never caught up with W or with the restore in W2")
    clock.lap("projection wait")
    now = _rankings(SOURCE)
    assert sum(1 for ids in now.values() if ids) >= 45  # the queries find records
    after = _rankings(TARGET)
    deadline = time.monotonic() + PROJECTION_WAIT_S
    while after != now and time.monotonic() < deadline:  # vectors may trail the watermark
        time.sleep(1.0)
        after = _rankings(TARGET)
    assert {k: v for k, v in after.items() if v != now[k]} == {}
    assert not any(forgotten_after in ids for ids in after.values())
    clock.lap("compare searches")
    print(f"backup round trip of {RECORDS} records: {clock}")
