"""Timeouts that must fit inside each other: the gate's decision window, the API's 30 s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from engram_memory.adapters.lambda_invoker import CONNECT_TIMEOUT_S, RESPONSE_MARGIN_S
from engram_memory.domain.confirmation import MAX_TTL_SECONDS

from infra import names
from tests.infra.template_view import function_logical_ids, logical_id_of

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra

# API Gateway HTTP API: an integration waits at most 30 s (the default and the maximum).
API_INTEGRATION_LIMIT_MS = 30_000


def _timeout_s(synthesized: Synthesized, function: str) -> int:
    lid = function_logical_ids(synthesized.template)[function]
    return int(synthesized.template["Resources"][lid]["Properties"]["Timeout"])


def _mapping_of(synthesized: Synthesized, function: str) -> dict[str, Any]:
    lid = function_logical_ids(synthesized.template)[function]
    (mapping,) = [m["Properties"] for m in
                  synthesized.resources("AWS::Lambda::EventSourceMapping").values()
                  if m["Properties"]["FunctionName"] == {"Ref": lid}]
    return mapping


def test_every_notifier_retry_happens_inside_the_decision_window(
        synthesized: Synthesized) -> None:
    queue = synthesized.template["Resources"][logical_id_of(
        synthesized.template["Resources"], "AWS::SQS::Queue", "ConfirmationQueue")]["Properties"]
    visibility = queue["VisibilityTimeout"]
    receives = queue["RedrivePolicy"]["maxReceiveCount"]
    # Lambda refuses an SQS event source whose visibility is below the function timeout.
    assert visibility >= _timeout_s(synthesized, "confirmation_notifier")
    # A failed delivery hides the request for `visibility`; all attempts fit the window.
    assert visibility * receives <= MAX_TTL_SECONDS
    assert visibility <= 60
    assert receives >= 5  # AWS's floor for Lambda event sources (throttling alone)
    assert _mapping_of(synthesized, "confirmation_notifier")["BatchSize"] == 1


def test_a_tool_invoke_fits_inside_the_endpoint_and_the_endpoint_inside_the_api(
        synthesized: Synthesized) -> None:
    integrations = synthesized.resources("AWS::ApiGatewayV2::Integration").values()
    for integration in integrations:
        limit = integration["Properties"].get("TimeoutInMillis", API_INTEGRATION_LIMIT_MS)
        assert limit <= API_INTEGRATION_LIMIT_MS
    for caller, callees in (("mcp_endpoint", names.TOOL_FUNCTIONS),
                            ("host_api", ("request_admission",))):
        budget = _timeout_s(synthesized, caller)
        assert budget * 1000 < API_INTEGRATION_LIMIT_MS, caller
        for callee in callees:
            # The invoke's read timeout is the caller's time left minus connect and margin;
            # a tool that runs to its own timeout still answers inside it.
            assert _timeout_s(synthesized, callee) + CONNECT_TIMEOUT_S + RESPONSE_MARGIN_S \
                <= budget, callee


def test_a_projector_batch_has_room_for_its_largest_records(synthesized: Synthesized) -> None:
    mapping = _mapping_of(synthesized, "projector")
    # Budget per record of the batch: a record of ~2,500 distinct terms needs 100
    # transactions of 25 terms, one after another.
    assert _timeout_s(synthesized, "projector") / mapping["BatchSize"] >= 30
    assert mapping["ParallelizationFactor"] == 1  # one batch per shard: per-key order
