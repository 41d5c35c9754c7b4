"""A sweep on a head that never settles stops retrying before the Lambda's reserve."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from engram_memory import bootstrap
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.expiry_sweeper import handler as sweeper_module
from tests.integration.expiry.support import HOUR_MS, SCHEDULED_EVENT, Expiry
from tests.integration.gate.botocore_hooks import http_response

LEFT_AFTER_RESERVE_S = 2.0
_HOOK = "before-send.dynamodb.TransactWriteItems"
_HOOK_ID = "expiry-head-never-settles"


@dataclass
class _EndingContext(LocalLambdaContext):
    """A Lambda context whose remaining time runs down with the wall clock."""

    ends_at: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        """What is left until ``ends_at``."""
        return int((self.ends_at - time.monotonic()) * 1000)


def _transaction_conflict(request: AWSPreparedRequest, **_: Any) -> AWSResponse:
    """DynamoDB's answer when another transaction holds the journal head, every time."""
    url = request.url
    request.url = "https://fault-injected.invalid/"  # moto's stub must not apply it
    body = json.dumps({
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "message": "Transaction cancelled, please refer cancellation reasons for specific "
                   "reasons [None, TransactionConflict]",
        "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]})
    response = http_response(request, 400, body.encode(), {
        "x-amzn-ErrorType": "TransactionCanceledException",
        "content-type": "application/x-amz-json-1.0"})
    response.url = url
    return response


def test_lost_commits_stop_retrying_before_the_reserve(expiry: Expiry) -> None:
    record_id = expiry.admit("Wombat cache is temporary.", expires_in_ms=HOUR_MS)
    expiry.clock.now += 2 * HOUR_MS
    events = bootstrap.dynamodb_client().meta.events
    events.register_first(_HOOK, _transaction_conflict, unique_id=_HOOK_ID)
    started = time.monotonic()
    context = _EndingContext(function_name="expiry_sweeper", ends_at=started + (
        sweeper_module.RESERVE_MS / 1000 + LEFT_AFTER_RESERVE_S))
    try:
        result = sweeper_module.lambda_handler(SCHEDULED_EVENT, context)
    finally:
        events.unregister(_HOOK, unique_id=_HOOK_ID)
    elapsed = time.monotonic() - started
    # Without the bound, 64 head attempts wait up to 0.5 s each (~15 s on average).
    assert elapsed < LEFT_AFTER_RESERVE_S, elapsed
    assert (result["expired"], result["failed"]) == (0, 1)
    assert expiry.record_item(record_id)["state"]["S"] == "accepted_current"
    assert len(expiry.index_items()) == 1  # the next run tries it again
