"""The queue-consumer Lambda: stores the task token and notifies the host, per record."""

from __future__ import annotations

import copy
import json
import secrets
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from engram_memory import bootstrap
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.confirmation_notifier import handler as notifier
from tests.integration.conftest import REGION
from tests.integration.gate.conftest import GateEnv
from tests.support.events import PRINCIPAL, WORKSPACE_ID

_EVENT = json.loads((Path(__file__).parents[2] / "events" /
                     "sqs_confirmation_requested.json").read_text(encoding="utf-8"))
BUS = "engram-host-notifications"


def _message(gate_env: GateEnv, ref: str, token: str) -> dict[str, str]:
    tenant = gate_env.settings.tenant_id
    return {"kind": "engram.confirmation.requested", "task_token": token,
            "pk": f"CONF#{tenant}#{WORKSPACE_ID}", "sk": f"REF#{ref}", "elicitation_ref": ref,
            "tenant_id": tenant, "workspace_id": WORKSPACE_ID, "tool": "forget",
            "target": "mem_abc", "operation_digest": "sha256:" + "e" * 64,
            "principal": PRINCIPAL, "expires_at_ms": "4102444800000"}


def _recorded(gate_env: GateEnv, ref: str) -> None:
    """The item exactly as the workflow's RecordRequest state writes it."""
    message = _message(gate_env, ref, "")
    gate_env.dynamodb.put_item(TableName=gate_env.settings.table_name, Item={
        "pk": {"S": message["pk"]}, "sk": {"S": message["sk"]}, "state": {"S": "requested"},
        "elicitation_ref": {"S": ref}, "tool": {"S": "forget"}, "target": {"S": "mem_abc"},
        "operation_digest": {"S": message["operation_digest"]},
        "principal": {"S": PRINCIPAL}, "requested_by": {"S": "op"},
        "created_at_ms": {"N": "1"}, "expires_at_ms": {"N": message["expires_at_ms"]},
        "window_seconds": {"N": "30"}, "ttl": {"N": "4102444800"},
    })


def _event(*bodies: str) -> dict[str, Any]:
    event: dict[str, Any] = {"Records": []}
    for index, body in enumerate(bodies):
        record = copy.deepcopy(_EVENT["Records"][0])
        record.update(messageId=f"message-{index}", body=body)
        event["Records"].append(record)
    return event


@pytest.fixture
def bus_queue(gate_env: GateEnv) -> Any:
    """An EventBridge bus whose notifications land on an SQS queue the test reads."""
    events = boto3.client("events", region_name=REGION, endpoint_url=gate_env.url)
    sqs = gate_env.sqs
    events.create_event_bus(Name=BUS)
    queue_url = sqs.create_queue(QueueName="host-notifications")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    events.put_rule(Name="confirmations", EventBusName=BUS,
                    EventPattern=json.dumps({"source": ["engram-memory"]}))
    events.put_targets(Rule="confirmations", EventBusName=BUS,
                       Targets=[{"Id": "host", "Arn": arn}])
    patch = pytest.MonkeyPatch()
    patch.setenv("ENGRAM_CONFIRMATION_EVENT_BUS", BUS)
    bootstrap.reset()
    yield queue_url
    patch.undo()
    bootstrap.reset()


def _received(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        messages = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages")
        if messages:
            return [json.loads(m["Body"]) for m in messages]
    return []


def test_the_task_token_is_stored_and_the_host_is_notified_without_it(
    gate_env: GateEnv, bus_queue: str
) -> None:
    ref = "conf_" + secrets.token_hex(16)
    _recorded(gate_env, ref)
    token = "task-token-" + secrets.token_hex(8)
    result = notifier.lambda_handler(_event(json.dumps(_message(gate_env, ref, token))),
                                     LocalLambdaContext("engram-confirmation-notifier"))
    assert result == {"batchItemFailures": []}
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    assert item["state"]["S"] == "awaiting_decision"
    assert item["task_token"]["S"] == token
    notified = _received(gate_env.sqs, bus_queue)
    assert [n["detail"]["elicitationRef"] for n in notified] == [ref]
    assert notified[0]["detail-type"] == "engram.confirmation.requested"
    assert token not in json.dumps(notified)


def test_only_the_failing_records_of_a_batch_are_reported(gate_env: GateEnv) -> None:
    bootstrap.reset()
    ref = "conf_" + secrets.token_hex(16)
    _recorded(gate_env, ref)
    good = json.dumps(_message(gate_env, ref, "token-" + secrets.token_hex(4)))
    result = notifier.lambda_handler(_event("{not json", good),
                                     LocalLambdaContext("engram-confirmation-notifier"))
    assert result == {"batchItemFailures": [{"itemIdentifier": "message-0"}]}


def test_a_message_for_a_confirmation_that_moved_on_is_dropped(gate_env: GateEnv) -> None:
    bootstrap.reset()
    ref = "conf_" + secrets.token_hex(16)
    _recorded(gate_env, ref)
    gate_env.dynamodb.update_item(
        TableName=gate_env.settings.table_name,
        Key={"pk": {"S": f"CONF#{gate_env.settings.tenant_id}#{WORKSPACE_ID}"},
             "sk": {"S": f"REF#{ref}"}},
        UpdateExpression="SET #s = :e", ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":e": {"S": "expired"}})
    result = notifier.lambda_handler(_event(json.dumps(_message(gate_env, ref, "late-token"))),
                                     LocalLambdaContext("engram-confirmation-notifier"))
    assert result == {"batchItemFailures": []}
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    assert item["state"]["S"] == "expired"
    assert "task_token" not in item
