"""The rehearsal catches a missing permission: a copy of the template without one grant."""

from __future__ import annotations

from engram_memory.local.moto_server import MotoService

from tests.rehearsal.flow import Flow, capture_arguments
from tests.rehearsal.harness import rehearse, without_grant
from tests.rehearsal.synthesis import SynthesizedStack


def test_a_role_without_its_dynamodb_grants_is_denied(synthesized: SynthesizedStack,
                                                       moto_server: MotoService) -> None:
    broken = without_grant(synthesized.template, "capture", "dynamodb:")
    with rehearse(synthesized, moto_server, template=broken) as rehearsal:
        flow = Flow(rehearsal)
        envelope = rehearsal.call_tool("capture", capture_arguments("A fact."), flow.agent())
        assert envelope["ok"] is False
        assert rehearsal.denials, "no access denied recorded"
        assert all("FunctionsCaptureRole" in d and " dynamodb:" in d
                   for d in rehearsal.denials), rehearsal.denials


def test_the_endpoint_without_invoke_cannot_reach_a_tool(synthesized: SynthesizedStack,
                                                         moto_server: MotoService) -> None:
    broken = without_grant(synthesized.template, "mcp_endpoint", "lambda:")
    with rehearse(synthesized, moto_server, template=broken) as rehearsal:
        flow = Flow(rehearsal)
        envelope = rehearsal.call_tool("capture", capture_arguments("A fact."), flow.agent())
        assert envelope["ok"] is False
        assert any("FunctionsMcpEndpointRole" in d and "lambda:InvokeFunction" in d
                   for d in rehearsal.denials), rehearsal.denials
