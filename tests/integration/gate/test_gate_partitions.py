"""The host API touches only confirmation items: its IAM fence, checked on what it does.

Its main-table statements allow ``CONF#*`` partitions only (infra/names.py); moto does not
evaluate IAM, so this records the partition key of every item the host API's own DynamoDB
client names while it requests, waits on, approves and shows a confirmation, and holds
them to that fence (tests/reliability/test_partition_fences.py does the same for the
tools, the projector and the sweeper).
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

import pytest
from engram_memory import bootstrap

from infra.names import MAIN_TABLE_PARTITIONS
from tests.integration.gate.botocore_hooks import default_session_hooks
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import decide, host_call, request_confirmation
from tests.integration.write_path.support import withdraw_args
from tests.support.events import PRINCIPAL, WORKSPACE_ID
from tests.support.partitions import families_used, item_partitions


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    yield
    bootstrap.reset()


def test_the_host_api_touches_only_the_partitions_its_fence_allows(gate_env: GateEnv) -> None:
    main_table = gate_env.settings.table_name
    touched: set[str] = set()
    host_thread = threading.get_ident()

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        if threading.get_ident() != host_thread:  # the queue pump's notifier, if hooked
            return
        touched.update(pk for table, pk in item_partitions(model.name, params)
                       if table == main_table)

    token = gate_env.maintainer_token()
    args = withdraw_args("cand_" + "f" * 52, key=f"withdraw-key-{secrets.token_hex(8)}")
    with default_session_hooks({"before-parameter-build.dynamodb": record}):
        ref = request_confirmation(token, WORKSPACE_ID, "withdraw", PRINCIPAL, args)
        gate_env.wait_for_state(WORKSPACE_ID, ref, "awaiting_decision")
        assert decide(token, WORKSPACE_ID, ref, "approve")["state"] == "approved"
        status, shown = host_call("GET", f"/host/confirmations/{ref}", token,
                                  query={"workspace_id": WORKSPACE_ID})
    assert status == 200, shown
    assert touched, "the host API made no main-table call"
    assert families_used(touched, MAIN_TABLE_PARTITIONS["host_api"]) == {"CONF#*"}
