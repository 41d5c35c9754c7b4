"""Output models: what services build, and what the envelope carries."""

from __future__ import annotations

import pytest
from engram_memory.contract.outputs import (
    AdmissionOutcome,
    CaptureValue,
    ForgetReceipt,
    RecordView,
    WithdrawReceipt,
    dump_value,
)
from engram_memory.contract.registry import TOOL_MODELS
from engram_memory.domain.context import Tool
from pydantic import ValidationError

from tests.fixtures import contract_fixtures as fx

DIGEST = fx.sha256_digest("d")


@pytest.mark.parametrize("tool", list(Tool))
def test_each_sample_value_round_trips_through_its_model(tool: Tool) -> None:
    value = fx.sample_values()[tool.value]
    assert dump_value(TOOL_MODELS[tool].value.model_validate(value)) == value


def test_optional_fields_are_omitted_not_null() -> None:
    value = CaptureValue(status="committed_pending", candidate_id=fx.CANDIDATE_ID, cursor="1",
                         transaction_receipt_digest=DIGEST)
    dumped = dump_value(value)
    assert "record_digest" not in dumped
    assert None not in dumped.values()


def test_an_accepted_admission_must_name_its_record() -> None:
    fields = {"candidate_id": fx.CANDIDATE_ID, "cursor": "3", "decision_receipt_digest": DIGEST,
              "transaction_receipt_digest": DIGEST}
    with pytest.raises(ValidationError):
        AdmissionOutcome(status="accepted", **fields)
    assert AdmissionOutcome(status="rejected", **fields).record_id is None


def test_receipts_fill_their_fixed_transition() -> None:
    common = {"event_id": "evt_1", "cursor": "4", "event_digest": DIGEST,
              "authorization_receipt_digest": DIGEST, "transaction_receipt_digest": DIGEST}
    withdrawn = dump_value(WithdrawReceipt(**common))
    assert (withdrawn["operation"], withdrawn["from_state"], withdrawn["to_state"]) == (
        "withdraw", "pending", "withdrawn")
    forgotten = dump_value(ForgetReceipt(from_state="historical", **common))
    assert (forgotten["operation"], forgotten["to_state"]) == ("tombstone", "tombstoned")
    with pytest.raises(ValidationError):
        ForgetReceipt(from_state="pending", **common)


def test_a_redacted_record_view_needs_only_its_record_id() -> None:
    assert dump_value(RecordView(record_id=fx.RECORD_ID)) == {"record_id": fx.RECORD_ID}


def test_a_full_record_view_accepts_the_stored_record() -> None:
    record = fx.sample_record()
    assert dump_value(RecordView.model_validate(record)) == record


@pytest.mark.parametrize(
    ("field", "value"),
    [("cursor", "007"), ("cursor", "-1"), ("record_digest", "sha256:abc"),
     ("recorded_at", "2026-02-30T00:00:00.000Z"), ("state", "pending"), ("extra", 1)],
)
def test_a_record_view_refuses_malformed_fields(field: str, value: object) -> None:
    with pytest.raises(ValidationError):
        RecordView.model_validate({**fx.sample_record(), field: value})
