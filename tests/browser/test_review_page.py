"""A person reviews what waits in the page, in Chromium, and the agent's call follows.

capture → admission → the agent asks for a forget → the host records the confirmation →
the page lists it → a click approves → the agent's forget, carrying the reference, commits.
Also: the reject path, hostile values rendered as text, an item whose TTL runs out.
Set ``ENGRAM_REVIEW_SCREENSHOTS=DIR`` to save the page's pictures (docs/review*.png).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from engram_memory import bootstrap, env_names
from engram_memory.local.service import RunningService
from playwright.sync_api import Page, expect

from tests.browser.conftest import OTHER_WORKSPACE, TENANT, WORKSPACE, maintainer_token
from tests.e2e.conftest import connect
from tests.e2e.test_memory_flow import capture_arguments

PURPOSE = "purpose:e2e"
PRINCIPAL = "local-user"
TOOLS = ["search", "get", "capture", "request_admission", "forget"]
HOSTILE = "<img src=x onerror=alert(1)>"
T = TypeVar("T")
SHOTS = os.environ.get("ENGRAM_REVIEW_SCREENSHOTS", "")


def _agent(work: Coroutine[Any, Any, T]) -> T:
    """Run an agent's MCP calls on their own thread (Playwright's sync API holds this one's
    event loop)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work).result(timeout=60)


def _envelope(result: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = result.structured_content
    return envelope


async def _call(service: RunningService, tool: str, arguments: dict[str, Any],
                **claims: Any) -> dict[str, Any]:
    token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=TOOLS,
                         principal=PRINCIPAL, **claims)
    async with connect(service.mcp_url, token, "auto") as client:
        return _envelope(await client.call_tool(f"engram_memory_{tool}", arguments))


def _admitted_record(service: RunningService, text: str) -> str:
    async def run() -> str:
        captured = await _call(service, "capture", capture_arguments(text, PURPOSE))
        candidate = captured["output"]["value"]["candidate_id"]
        admitted = await _call(service, "request_admission", {
            "candidate_id": candidate, "idempotency_key": "br-admit-" + secrets.token_hex(8)})
        return str(admitted["output"]["value"]["outcome"]["record_id"])
    return _agent(run())


def _forget_arguments(record_id: str, reason: str = "reason:owner-request") -> dict[str, Any]:
    return {"record_id": record_id, "idempotency_key": "br-forget-" + secrets.token_hex(8),
            "reason_ref": reason}


def _host_asks(service: RunningService, arguments: dict[str, Any], ttl: int = 120,
               principal: str = PRINCIPAL, workspace: str = WORKSPACE) -> str:
    """What the host does when its agent asks to forget: record a confirmation request."""
    response = httpx2.post(service.base_url + "/host/confirmations", json={
        "workspace_id": workspace, "capability": "forget", "principal": principal,
        "arguments": arguments, "ttl_seconds": ttl,
    }, headers={"Authorization": f"Bearer {maintainer_token(service)}"}, timeout=30)
    assert response.status_code == 201, response.text
    return str(response.json()["elicitationRef"])


def _open(page: Page, service: RunningService) -> list[str]:
    """Open the page, paste a token, show the workspace; the dialogs it raised, if any."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(service.base_url + "/host/review")
    page.fill("#token", maintainer_token(service))
    page.fill("#workspace", WORKSPACE)
    page.fill("#approver", "alice")
    page.click("#show")
    expect(page.locator("#status")).to_contain_text("Workspace " + WORKSPACE)
    expect(page.locator("#coverage")).to_have_text(
        f"This token is tenant-wide: it covers every workspace of tenant {TENANT}.")
    return dialogs


def _item(page: Page, ref: str) -> Any:
    return page.locator(f'#confirmations li[data-ref="{ref}"]')


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


def test_a_person_approves_the_agents_forget_in_the_page_and_the_forget_commits(
    service: RunningService, page: Page,
) -> None:
    marker = "wombat" + secrets.token_hex(3)
    record_id = _admitted_record(service, f"The staging database is reset nightly ({marker}).")
    forget = _forget_arguments(record_id)
    asked = _agent(_call(service, "forget", forget, confirmation_ref="conf_none"))
    assert asked["error"]["code"] == "gate_failed"   # no approval yet: nothing happens
    ref = _host_asks(service, forget)

    _open(page, service)
    item = _item(page, ref)
    expect(item).to_be_visible()
    expect(item.locator(".title")).to_have_text(f"forget {record_id}")
    expect(item).to_contain_text("reason:owner-request")
    expect(item).to_contain_text(PRINCIPAL)
    expect(item.locator(".ttl")).to_contain_text("left")
    _shot(page, "review-page.png")
    item.locator("button[data-decision=approve]").click()
    expect(page.locator("#confirmations")).not_to_contain_text(ref, timeout=15_000)
    expect(page.locator("#confirmations")).to_contain_text("No confirmation waits.")

    forgotten = _agent(_call(service, "forget", forget, confirmation_ref=ref))
    assert forgotten["ok"] is True, forgotten
    assert forgotten["output"]["value"]["receipt"]["to_state"] == "tombstoned"
    got = _agent(_call(service, "get", {"record_id": record_id, "purpose_ref": PURPOSE}))
    assert got["error"]["code"] == "NOT_FOUND"


def test_a_rejected_forget_never_commits(service: RunningService, page: Page) -> None:
    record_id = _admitted_record(service, f"Invoices are archived after {secrets.token_hex(3)}.")
    forget = _forget_arguments(record_id)
    ref = _host_asks(service, forget)
    _open(page, service)
    _item(page, ref).locator("button[data-decision=reject]").click()
    expect(_item(page, ref)).to_have_count(0, timeout=15_000)
    refused = _agent(_call(service, "forget", forget, confirmation_ref=ref))
    assert refused["error"]["code"] == "gate_failed"
    got = _agent(_call(service, "get", {"record_id": record_id, "purpose_ref": PURPOSE}))
    assert got["ok"] is True


def test_hostile_values_show_as_the_characters_they_are(
    service: RunningService, page: Page,
) -> None:
    # The captured content, the agent's reason and the principal all carry markup; the
    # page shows the reason and principal (content stays in memory: the page lists
    # metadata) as text, and nothing runs or loads.
    record_id = _admitted_record(service, HOSTILE)
    ref = _host_asks(service, _forget_arguments(record_id, reason=HOSTILE), principal=HOSTILE)
    dialogs = _open(page, service)
    item = _item(page, ref)
    expect(item).to_be_visible()
    texts = item.locator("dd").all_text_contents()
    assert texts.count(HOSTILE) == 2           # reason and principal, character for character
    assert page.locator("img").count() == 0
    assert page.evaluate("() => document.querySelectorAll('[onerror]').length") == 0
    page.wait_for_timeout(500)
    assert dialogs == []
    _shot(page, "review-page-hostile.png")
    item.locator("button[data-decision=reject]").click()
    expect(_item(page, ref)).to_have_count(0, timeout=15_000)


def test_an_item_whose_ttl_runs_out_turns_expired_and_cannot_be_approved(
    service: RunningService, page: Page,
) -> None:
    record_id = _admitted_record(service, f"Old tickets close after {secrets.token_hex(3)}.")
    forget = _forget_arguments(record_id)
    ref = _host_asks(service, forget, ttl=4)
    _open(page, service)
    item = _item(page, ref)
    expect(item.locator(".ttl")).to_contain_text("left")
    expect(item.locator(".ttl")).to_have_text("expired", timeout=10_000)
    expect(item).to_have_class("item expired")
    expect(item.locator("button[data-decision=approve]")).to_be_disabled()
    _shot(page, "review-page-expired.png")
    # The workflow marks it expired; the next refresh drops it from the list.
    expect(_item(page, ref)).to_have_count(0, timeout=20_000)
    decided = httpx2.post(service.base_url + f"/host/confirmations/{ref}/decision", json={
        "workspace_id": WORKSPACE, "decision": "approve", "approver": "alice"},
        headers={"Authorization": f"Bearer {maintainer_token(service)}"}, timeout=30)
    assert decided.status_code == 409
    refused = _agent(_call(service, "forget", forget, confirmation_ref=ref))
    assert refused["error"]["code"] == "gate_failed"


def _held_candidate(service: RunningService, text: str) -> str:
    """A candidate the deployment's policy held for a human (mode set, then restored)."""
    previous = os.environ.get(env_names.ADMISSION_MODE)
    os.environ[env_names.ADMISSION_MODE] = "adjudicate"
    bootstrap.reset()
    try:
        async def held() -> str:
            captured = await _call(service, "capture", capture_arguments(text, PURPOSE))
            candidate = captured["output"]["value"]["candidate_id"]
            admitted = await _call(service, "request_admission", {
                "candidate_id": candidate,
                "idempotency_key": "br-admit-" + secrets.token_hex(8)})
            assert admitted["output"]["value"]["outcome"]["status"] == "pending_adjudication"
            return str(candidate)
        return _agent(held())
    finally:
        if previous is None:
            os.environ.pop(env_names.ADMISSION_MODE, None)
        else:
            os.environ[env_names.ADMISSION_MODE] = previous
        bootstrap.reset()


def test_a_held_candidate_whose_content_is_markup_shows_those_characters(
    service: RunningService, page: Page,
) -> None:
    candidate = _held_candidate(service, HOSTILE)
    dialogs = _open(page, service)
    item = page.locator(f'#adjudications li[data-candidate="{candidate}"]')
    item.locator("button[data-show=content]").click()
    shown = item.locator(".content dd")
    expect(shown.first).to_have_text(HOSTILE)
    assert HOSTILE in shown.all_text_contents()
    assert page.locator("img").count() == 0
    page.wait_for_timeout(500)
    assert dialogs == []
    _shot(page, "review-page-hostile-content.png")
    item.locator("button[data-decision=reject]").click()
    expect(item).to_have_count(0, timeout=15_000)


def test_a_person_accepts_a_held_candidate_and_the_agent_can_read_it(
    service: RunningService, page: Page,
) -> None:
    marker = "numbat" + secrets.token_hex(3)
    candidate = _held_candidate(service, f"Pager duty rotates on Mondays ({marker}).")
    _open(page, service)
    item = page.locator(f'#adjudications li[data-candidate="{candidate}"]')
    expect(item).to_contain_text(PRINCIPAL)
    item.locator("button[data-show=content]").click()
    expect(item.locator(".content")).to_contain_text(marker)
    _shot(page, "review-page-adjudication.png")
    item.locator("button[data-decision=accept]").click()
    expect(item).to_have_count(0, timeout=15_000)
    found = _agent(_call(service, "search", {"query": marker, "purpose_ref": PURPOSE}))
    assert found["ok"] is True, found
    assert [p for p in found["output"]["value"]["records"]
            if marker in json.dumps(p["record"])], found


def _unheld_record_id() -> str:
    """A well-formed record id (a forget's confirmation names its target; none need exist)."""
    return "mem_" + base64.b32encode(secrets.token_bytes(10)).decode().lower()


_DECIDE_FROM_THE_PAGE = """async ([token, ref, workspace]) => {
  const response = await fetch("/host/confirmations/" + ref + "/decision", {
    method: "POST", cache: "no-store",
    headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    body: JSON.stringify({workspace_id: workspace, decision: "approve", approver: "mallory"}),
  });
  return [response.status, await response.json()];
}"""
_LIST_FROM_THE_PAGE = """async ([token, workspace]) => {
  const response = await fetch("/host/confirmations?state=pending&workspace_id=" + workspace,
    {headers: {"Authorization": "Bearer " + token}, cache: "no-store"});
  return [response.status, await response.json()];
}"""
FORBIDDEN = {"error": {"code": "FORBIDDEN", "message": "The maintain permission is required."}}


def test_a_reviewer_scoped_to_one_workspace_sees_only_it_and_cannot_decide_another(
    service: RunningService, page: Page,
) -> None:
    mine = _host_asks(service, _forget_arguments(_unheld_record_id()))
    theirs = _host_asks(service, _forget_arguments(_unheld_record_id()),
                        workspace=OTHER_WORKSPACE)
    scoped = maintainer_token(service, workspaces=[WORKSPACE])

    page.goto(service.base_url + "/host/review")
    page.fill("#token", scoped)
    page.fill("#workspace", OTHER_WORKSPACE)    # even typed, the other one is never offered
    page.fill("#approver", "alice")
    page.click("#show")
    expect(page.locator("#coverage")).to_have_text(
        f"This token covers workspace {WORKSPACE} (tenant {TENANT}) and no other.")
    expect(page.locator("#workspace")).to_be_hidden()
    expect(page.locator("#workspace-choice option")).to_have_text([WORKSPACE])
    expect(page.locator("#status")).to_contain_text("Workspace " + WORKSPACE)
    expect(_item(page, mine)).to_be_visible()
    expect(_item(page, theirs)).to_have_count(0)
    assert theirs not in page.locator("body").inner_text()
    _shot(page, "review-page-scoped.png")

    # The token in hand, straight from the page: the other workspace is refused, constantly.
    assert page.evaluate(_DECIDE_FROM_THE_PAGE, [scoped, theirs, OTHER_WORKSPACE]) == [
        403, FORBIDDEN]
    assert page.evaluate(_LIST_FROM_THE_PAGE, [scoped, OTHER_WORKSPACE]) == [403, FORBIDDEN]
    # Its reference under the covered workspace names nothing there.
    status, _ = page.evaluate(_DECIDE_FROM_THE_PAGE, [scoped, theirs, WORKSPACE])
    assert status == 404
    tenant_wide = {"Authorization": f"Bearer {maintainer_token(service)}"}
    shown = httpx2.get(service.base_url + f"/host/confirmations/{theirs}",
                       params={"workspace_id": OTHER_WORKSPACE}, headers=tenant_wide, timeout=30)
    assert shown.status_code == 200
    assert shown.json()["state"] in ("requested", "awaiting_decision")   # still undecided
    assert "approver" not in shown.json()

    # Within its workspace the scoped reviewer decides as any other.
    _item(page, mine).locator("button[data-decision=reject]").click()
    expect(_item(page, mine)).to_have_count(0, timeout=15_000)

    # A tenant-wide reviewer is told so and reaches the other team's confirmation.
    page.click("#forget-token")
    expect(page.locator("#coverage")).to_be_hidden()
    page.fill("#token", maintainer_token(service))
    expect(page.locator("#workspace")).to_be_visible()
    page.fill("#workspace", OTHER_WORKSPACE)
    page.click("#show")
    expect(page.locator("#coverage")).to_contain_text("tenant-wide")
    _item(page, theirs).locator("button[data-decision=reject]").click()
    expect(_item(page, theirs)).to_have_count(0, timeout=15_000)


def test_a_token_the_service_refuses_lists_nothing(service: RunningService, page: Page) -> None:
    page.goto(service.base_url + "/host/review")
    page.fill("#token", "not-a-token")
    page.click("#show")
    expect(page.locator("#status")).to_have_text(
        "Could not read what the token covers: UNAUTHENTICATED: "
        "A valid host maintainer token is required.")
    expect(page.locator("#coverage")).to_be_hidden()
    expect(page.locator("#forget-token")).to_be_disabled()
    assert page.locator("#confirmations li").count() == 0
