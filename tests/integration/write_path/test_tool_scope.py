"""A tool event is served only for this deployment's tenant and workspaces.

The endpoint already verified the host token, but each tool function checks the scope of
the event it receives against its own settings: an event for another tenant or workspace
is UNAUTHORIZED, and a tenant or workspace id holding the key separator '#' is
INVALID_SCHEMA. Either way nothing is written.
"""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.domain.context import Tool

from tests.fixtures.contract_fixtures import valid_capture_args
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import call, capture, code

FOREIGN = [{"tenant_id": "tenant-b"}, {"workspace_id": "ws-elsewhere"}]
SEPARATOR = [{"tenant_id": "tenant-a#ws-main"}, {"workspace_id": "ws-main#CAND"}]


def _written(aws: AwsEnv) -> int:
    return sum(len(items) for items in aws.scan_all().values())


@pytest.mark.parametrize("scope", FOREIGN, ids=["another-tenant", "another-workspace"])
def test_a_capture_for_a_scope_this_deployment_does_not_serve_is_unauthorized(
        aws: AwsEnv, scope: dict[str, str]) -> None:
    before = _written(aws)
    assert code(call(Tool.CAPTURE, valid_capture_args(), **scope)) == "UNAUTHORIZED"
    assert _written(aws) == before


@pytest.mark.parametrize("scope", FOREIGN, ids=["another-tenant", "another-workspace"])
def test_an_admission_request_for_a_foreign_scope_is_unauthorized(
        aws: AwsEnv, scope: dict[str, str]) -> None:
    candidate = str(capture()["candidate_id"])
    args = {"candidate_id": candidate, "idempotency_key": "admission-key-0001-ingest"}
    assert code(call(Tool.REQUEST_ADMISSION, args, **scope)) == "UNAUTHORIZED"


@pytest.mark.parametrize("scope", SEPARATOR, ids=["tenant", "workspace"])
def test_a_scope_id_with_the_key_separator_is_invalid_schema(
        aws: AwsEnv, scope: dict[str, Any]) -> None:
    before = _written(aws)
    assert code(call(Tool.CAPTURE, valid_capture_args(), **scope)) == "INVALID_SCHEMA"
    assert _written(aws) == before


def test_a_configured_second_workspace_is_served(aws: AwsEnv) -> None:
    # BASE_ENV lists ws-main and ws-other: the check admits every configured workspace.
    assert capture(workspace_id="ws-other")["candidate_id"].startswith("cand_")
