"""The whole flow on the stack as synthesized, every function under its own role.

Any AccessDenied means the stack lacks a permission the code needs: fix the stack.
"""

from __future__ import annotations

import secrets

from tests.rehearsal.flow import BOTH, PURPOSE, Flow, value
from tests.rehearsal.harness import Rehearsal


def test_capture_admit_search_get_withdraw_forget_sweep(rehearsal: Rehearsal) -> None:
    flow = Flow(rehearsal)
    marker = "wombat" + secrets.token_hex(3)
    record_id = flow.admit_by_host(flow.capture(
        f"The billing database backups are verified every Monday ({marker})."))
    assert rehearsal.feed_projector() >= 1

    assert record_id in flow.search(marker)
    assert record_id in flow.search(f"billing backups {marker}", capability_policy=BOTH)
    got = value(flow.call("get", {"record_id": record_id, "purpose_ref": PURPOSE}))
    assert got["record"]["record_id"] == record_id

    pending = flow.capture(f"A draft about the cache eviction policy ({marker}).")
    withdraw = {"candidate_id": pending, "reason_ref": "reason:superseded",
                "idempotency_key": "rehearsal-withdraw-" + secrets.token_hex(8)}
    ref = flow.approved_confirmation("withdraw", withdraw)
    withdrawn = value(flow.call("withdraw", withdraw, confirmation_ref=ref))
    assert withdrawn["receipt"]["to_state"] == "withdrawn", withdrawn

    forget = {"record_id": record_id, "reason_ref": "reason:owner-request",
              "idempotency_key": "rehearsal-forget-" + secrets.token_hex(8)}
    ref = flow.approved_confirmation("forget", forget)
    forgotten = value(flow.call("forget", forget, confirmation_ref=ref))
    assert forgotten["receipt"]["to_state"] == "tombstoned", forgotten
    assert rehearsal.feed_projector() >= 1
    assert record_id not in flow.search(marker)
    assert record_id not in flow.search(f"billing backups {marker}", capability_policy=BOTH)
    missing = flow.call("get", {"record_id": record_id, "purpose_ref": PURPOSE})
    assert missing["error"]["code"] == "NOT_FOUND"

    swept = rehearsal.sweep()
    assert isinstance(swept, dict), swept
    assert rehearsal.denials == []
