"""get of a record too large for any packet (stored before capture's bound) still answers.

The record reader is a stand-in holding one eligible row (the port, not the code under
test); GetService, the budget and the redactor are the real ones.
"""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.contract.inputs import GetArgs
from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.context import InvocationContext, Scope, Tool
from engram_memory.domain.errors import ProjectionOversized
from engram_memory.domain.packet_bound import LARGEST_PACKET_BYTES
from engram_memory.services.get import GetService
from engram_memory.services.ports.read import RecordRow
from engram_memory.services.redaction import Redactor

from tests.fixtures.contract_fixtures import valid_payload

RECORD_ID = "mem_" + "a" * 52
CITED = valid_payload()
PURPOSE = "purpose:x"
CTX = InvocationContext(
    scope=Scope("t1", "ws1"), principal="alice", agent_id="a1", session_id="s1",
    purpose_ref=PURPOSE, audit_id="audit-host", deadline_ms=2_000,
    capabilities=frozenset({Tool.GET}), token_id="jti-1",
)


def _parts(total: int) -> list[int]:
    """Component text lengths (each within the contract's 65,536 bytes) summing to total."""
    return [65_536] * (total // 65_536) + ([total % 65_536] if total % 65_536 else [])


class _Clock:
    def now_ms(self) -> int:
        return 150


class _OneRecord:
    def __init__(self, text_bytes: int) -> None:
        record = {"record_id": RECORD_ID, "record_digest": "sha256:" + "0" * 64,
                  "state": "accepted_current", "purpose_ref": PURPOSE,
                  "components": [
                      {**CITED["components"][0], "component_id": f"c{n}", "text": "x" * part}
                      for n, part in enumerate(_parts(text_bytes))],
                  "citations": CITED["citations"]}
        self.row = RecordRow(
            record_id=RECORD_ID, state="accepted_current", record=record,
            record_digest="sha256:" + "0" * 64, payload_digest="p", parts=0, valid_t=100,
            valid_t_end=None, expires_at_ms=None, recorded_cursor=5)

    def head_cursor(self, scope: Scope) -> int:
        return 9

    def get_record(self, scope: Scope, record_id: str) -> RecordRow | None:
        return self.row if record_id == RECORD_ID else None

    def get_visible_record(self, scope: Scope, record_id: str,
                           purpose: str | None) -> RecordRow | None:
        visible = purpose is None or purpose == PURPOSE
        return self.row if record_id == RECORD_ID and visible else None


def _get(text_bytes: int, budget: int) -> dict[str, Any]:
    service = GetService(_OneRecord(text_bytes), _Clock(), Redactor())  # type: ignore[arg-type]
    return service.execute(CTX, GetArgs(record_id=RECORD_ID, purpose_ref=PURPOSE,
                                        max_packet_bytes=budget))


def test_a_record_that_fits_the_largest_packet_is_oversized_below_it() -> None:
    whole = _get(100_000, LARGEST_PACKET_BYTES)
    assert whole["redacted_fields"] == []
    with pytest.raises(ProjectionOversized):
        _get(100_000, 65_536)


@pytest.mark.parametrize("budget", [4_096, 65_536, LARGEST_PACKET_BYTES])
def test_a_record_too_large_for_any_packet_is_read_with_its_largest_fields_redacted(
        budget: int) -> None:
    value = _get(LARGEST_PACKET_BYTES, budget)
    assert len(canonical_json(value)) <= budget
    assert value["record"]["record_id"] == RECORD_ID
    assert value["redacted_fields"] == ["/components"]
    assert value["record"]["citations"] == CITED["citations"]
