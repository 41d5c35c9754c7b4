"""``engram-memory import --from mem0`` against the local service (issue 31 item 5): the
fixture migrates, search finds what it brought, a rerun imports nothing, an interrupted run
resumed completes, a malformed file writes nothing, agent and uncovered tokens get 403."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from engram_memory.cli import import_mem0
from engram_memory.cli.host_client import HostClient
from engram_memory.cli.import_mem0 import migrate, poster
from engram_memory.cli.main import main
from engram_memory.local.service import RunningService
from engram_memory.service_home import HOST_KEY_FILE

from tests.fixtures import mem0_export
from tests.support.host_tokens import load_or_create_host_key, mint_maintainer_token

from .conftest import MEM0_WORKSPACE, WORKSPACE, connect
from .test_memory_flow import value

MEM0_PURPOSE = "purpose:mem0-import"
SEARCH_WAIT_S = 120  # a safety net only: the test goes on as soon as the projector caught up


def _maintainer(service: RunningService, workspaces: list[str] | None = None) -> str:
    key = load_or_create_host_key(service.home / HOST_KEY_FILE)
    ident = service.identity
    scope: dict[str, Any] = ({"workspaces": workspaces} if workspaces is not None
                             else {"tenant_wide": True})
    return mint_maintainer_token(key, issuer=ident.issuer, audience=ident.audience,
                                 tenant=ident.tenant, now=time.time(), **scope)


def _import(service: RunningService, file: Path, capsys: pytest.CaptureFixture[str],
            token: str) -> tuple[int, dict[str, Any], str]:
    status = main(["import", "--from", "mem0", "--url", service.base_url, "--workspace",
                   MEM0_WORKSPACE, "--purpose", MEM0_PURPOSE, "--token", token, str(file)])
    captured = capsys.readouterr()
    return status, (json.loads(captured.out) if captured.out.strip() else {}), captured.err


def _write(path: Path, export: object) -> Path:
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    return path


def _fixture() -> list[dict[str, Any]]:
    """The whole fixture: 200 distinct memories (3 with credentials, 5 unicode texts) and
    its 5 repeats."""
    return mem0_export.build()


def _find_by_search(service: RunningService, query: str, mem0_id: str) -> dict[str, Any]:
    """The record that cites ``mem0:<mem0_id>``, found by search and read by get (polled:
    the projector indexes asynchronously); {} if it never shows up."""
    token = service.mint(workspace=MEM0_WORKSPACE, purpose_ref=MEM0_PURPOSE,
                         capabilities=["search", "get"])

    async def poll() -> dict[str, Any]:
        async with connect(service.mcp_url, token, "auto") as client:
            deadline = time.monotonic() + SEARCH_WAIT_S
            while time.monotonic() < deadline:
                found = value(await client.call_tool(
                    "engram_memory_search", {"query": query, "purpose_ref": MEM0_PURPOSE}))
                for packet in found["records"]:
                    got = value(await client.call_tool("engram_memory_get", {
                        "record_id": packet["record"]["record_id"],
                        "purpose_ref": MEM0_PURPOSE}))["record"]
                    sources = [c["source_ref"] for c in got.get("citations") or []]
                    if sources == ["mem0:" + mem0_id]:
                        return dict(got)
                await asyncio.sleep(0.5)
            return {}

    return asyncio.run(poll())


def test_the_fixture_migrates_is_found_by_search_and_a_rerun_imports_nothing(
    service: RunningService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    token = _maintainer(service)
    export = _fixture()
    secrets_refused = sorted(m["id"] for m in export[:mem0_export.EXPECTED.refused_secret])
    imported = mem0_export.DISTINCT - len(secrets_refused)

    status, first, _ = _import(service, _write(tmp_path / "w.json", {"results": export}),
                               capsys, token)
    assert status == 0
    # A write whose answer was lost is sent again and replayed (already_present), once.
    assert first["imported"] + first["already_present"] == imported
    assert first["refused"] == {"INVALID_SCHEMA": secrets_refused}
    assert len(first["duplicates"]["same_id"]) == mem0_export.REPEATED_IDS
    assert len(first["duplicates"]["same_content"]) == mem0_export.REPEATED_CONTENTS
    assert first["unfinished"] == []
    assert "AKIA" not in json.dumps(first)  # ids and codes only, never content

    target = mem0_export.memory(43)  # "Preference #43: prefers coffee at meeting 43"
    hit = _find_by_search(service, "coffee meeting 43", target["id"])
    assert hit["components"][0]["text"] == target["memory"]
    assert hit["valid_time"] == {"t": mem0_export.created_ms(43)}

    status, second, _ = _import(service, _write(tmp_path / "bare.json", export), capsys, token)
    assert status == 0
    assert (second["imported"], second["already_present"]) == (0, imported)

    conflict = mem0_export.conflicting()
    assert conflict[0]["id"] in {m["id"] for m in export}
    status, third, _ = _import(service, _write(tmp_path / "c.json", conflict), capsys, token)
    assert status == 1
    assert third["refused"] == {"MIGRATION_LEDGER_INVALID": [conflict[0]["id"]]}


def _own(prefix: str, count: int) -> list[dict[str, Any]]:
    return [mem0_export.memory(n, text=f"{prefix} fact number {n}", mem_id=f"{prefix}-{n}")
            for n in range(count)]


def test_an_interrupted_run_resumed_completes_without_importing_twice(
    service: RunningService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The command's batches of 4 instead of MAX_BATCH: one batch going through before the
    # interruption is the case, whatever its size.
    monkeypatch.setattr(import_mem0, "MAX_BATCH", 4)
    token = _maintainer(service)
    export = _own("resumed", 4 * 2 + 3)
    file = _write(tmp_path / "resume.json", export)
    client = HostClient(service.base_url, token)
    send = poster(client, MEM0_WORKSPACE, MEM0_PURPOSE)
    sent: list[int] = []

    def killed_after_one_batch(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if sent:
            raise KeyboardInterrupt  # the operator's Ctrl-C once a batch went through
        sent.append(len(batch))
        return send(batch)

    try:
        with pytest.raises(KeyboardInterrupt):
            migrate(functools.partial(file.open, encoding="utf-8"), killed_after_one_batch)
    finally:
        client.close()

    status, resumed, _ = _import(service, file, capsys, token)
    assert status == 0
    assert sent == [4]
    assert resumed["imported"] + resumed["already_present"] == len(export)
    status, again, _ = _import(service, file, capsys, token)
    assert (status, again["imported"], again["already_present"]) == (0, 0, len(export))


def test_a_malformed_file_is_refused_whole_and_writes_nothing(
    service: RunningService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    token = _maintainer(service)
    good = _own("malformed", 12)
    broken = [*good, {"id": "no-text-here", "created_at": "2025-01-01T00:00:00Z"}]
    status, report, err = _import(service, _write(tmp_path / "bad.json", broken), capsys, token)
    assert status == 1
    assert report == {}
    assert json.loads(err)["error"] == "MIGRATION_LEDGER_INVALID"

    status, after, _ = _import(service, _write(tmp_path / "good.json", good), capsys, token)
    assert status == 0
    assert (after["imported"], after["already_present"]) == (len(good), 0)  # none came before


def test_an_agent_or_uncovered_operator_token_cannot_migrate(service: RunningService) -> None:
    agent = service.mint(workspace=MEM0_WORKSPACE, purpose_ref=MEM0_PURPOSE,
                         capabilities=["capture", "request_admission"])
    elsewhere = _maintainer(service, workspaces=[WORKSPACE])
    body = {"workspace_id": MEM0_WORKSPACE, "purpose_ref": MEM0_PURPOSE,
            "memories": [{"id": "refused-try-1", "memory": "may not", "created_at_ms": 1}]}
    for token in (agent, elsewhere):
        response = httpx2.post(service.base_url + "/host/migrations/mem0", json=body,
                               headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "FORBIDDEN"
