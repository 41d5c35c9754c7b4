"""The host routes served by the local service through the same host_api handler."""

from __future__ import annotations

import time

import httpx2
from engram_memory.local.service import RunningService
from engram_memory.local.state import HOST_KEY_FILE

from tests.support.host_tokens import load_or_create_host_key, mint_maintainer_token

from .conftest import PURPOSE, WORKSPACE


def maintainer(service: RunningService) -> str:
    key = load_or_create_host_key(service.home / HOST_KEY_FILE)
    ident = service.identity
    return mint_maintainer_token(key, issuer=ident.issuer, audience=ident.audience,
                                 tenant=ident.tenant, now=time.time(), tenant_wide=True)


def test_host_routes_refuse_a_request_without_the_maintenance_permission(
    service: RunningService,
) -> None:
    agent = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=["search"])
    for headers in ({}, {"Authorization": f"Bearer {agent}"}):
        response = httpx2.get(
            service.base_url + f"/host/confirmations/conf-unknown?workspace_id={WORKSPACE}",
            headers=headers)
        assert response.status_code in (401, 403)


def test_host_routes_answer_an_operator_through_the_lambda_handler(
    service: RunningService,
) -> None:
    response = httpx2.get(
        service.base_url + f"/host/confirmations/conf-unknown?workspace_id={WORKSPACE}",
        headers={"Authorization": f"Bearer {maintainer(service)}"})
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")


def test_a_workspace_scoped_operator_is_refused_on_another_workspace(
    service: RunningService,
) -> None:
    key = load_or_create_host_key(service.home / HOST_KEY_FILE)
    ident = service.identity
    scoped = mint_maintainer_token(key, issuer=ident.issuer, audience=ident.audience,
                                   tenant=ident.tenant, now=time.time(), workspaces=[WORKSPACE])
    headers = {"Authorization": f"Bearer {scoped}"}
    own = httpx2.get(service.base_url + "/host/confirmations",
                     params={"workspace_id": WORKSPACE, "state": "pending"}, headers=headers)
    assert own.status_code == 200
    other = httpx2.get(service.base_url + "/host/confirmations",
                       params={"workspace_id": "another-team", "state": "pending"},
                       headers=headers)
    assert other.status_code == 403
    assert other.json() == {"error": {"code": "FORBIDDEN",
                                      "message": "The maintain permission is required."}}
