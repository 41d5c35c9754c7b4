"""The one confirmation-gate ASL file: substitutions and the constructs it relies on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engram_memory.gate.definition import raw_definition, render_definition

QUEUE_URL = "http://127.0.0.1:5000/123456789012/engram-confirmations-t"


def _states() -> dict[str, Any]:
    states: dict[str, Any] = json.loads(
        render_definition({"TableName": "main", "QueueUrl": QUEUE_URL}))["States"]
    return states


def test_the_definition_file_ships_with_the_package_and_uses_both_substitutions() -> None:
    text = raw_definition()  # read from the installed package's data
    assert "${TableName}" in text
    assert "${QueueUrl}" in text


def test_rendering_replaces_every_placeholder_and_keeps_valid_json() -> None:
    rendered = render_definition({"TableName": "main", "QueueUrl": QUEUE_URL})
    assert "${" not in rendered
    assert QUEUE_URL in rendered


def test_a_missing_substitution_is_refused_rather_than_left_as_a_placeholder() -> None:
    with pytest.raises(ValueError, match="QueueUrl"):
        render_definition({"TableName": "main"})


def test_a_substitution_value_cannot_change_the_documents_shape() -> None:
    hostile = 'main", "Evil": "x'
    rendered = json.loads(render_definition({"TableName": hostile, "QueueUrl": QUEUE_URL}))
    assert rendered["States"]["RecordRequest"]["Parameters"]["TableName"] == 'main", "Evil": "x'


def test_the_decision_wait_is_a_task_token_callback_bounded_by_the_ttl_input() -> None:
    wait = _states()["AwaitDecision"]
    assert wait["Resource"] == "arn:aws:states:::sqs:sendMessage.waitForTaskToken"
    assert wait["TimeoutSecondsPath"] == "$.ttl_seconds"
    body = wait["Parameters"]["MessageBody"]
    assert body["task_token.$"] == "$$.Task.Token"


def test_rejection_and_timeout_lead_to_their_own_states() -> None:
    catches = {c["ErrorEquals"][0]: c["Next"]
               for c in _states()["AwaitDecision"]["Catch"]}
    assert catches == {"Rejected": "MarkRejected", "States.ALL": "MarkExpired"}


def test_the_window_closes_only_an_unconsumed_approval() -> None:
    states = _states()
    assert states["ExecutionWindow"]["SecondsPath"] == "$.window_seconds"
    close = states["CloseWindow"]["Parameters"]
    assert close["ConditionExpression"] == "#s = :approved"


def test_every_task_uses_an_integration_moto_and_aws_both_run() -> None:
    allowed = {"arn:aws:states:::dynamodb:putItem", "arn:aws:states:::dynamodb:updateItem",
               "arn:aws:states:::sqs:sendMessage.waitForTaskToken"}
    resources = {s["Resource"] for s in _states().values() if s["Type"] == "Task"}
    assert resources <= allowed
