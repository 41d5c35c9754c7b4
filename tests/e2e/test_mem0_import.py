"""``engram-memory import --from mem0`` against the local service (issue 31 item 5)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx2
import pytest
from engram_memory.local.cli import main
from engram_memory.local.service import RunningService
from engram_memory.local.state import HOST_KEY_FILE
from engram_memory.local.tokens import load_or_create_host_key, mint_maintainer_token

from tests.fixtures import mem0_export

from .conftest import MEM0_WORKSPACE, PURPOSE

MEM0_PURPOSE = "purpose:mem0-import"


def _maintainer(service: RunningService) -> str:
    key = load_or_create_host_key(service.home / HOST_KEY_FILE)
    ident = service.identity
    return mint_maintainer_token(key, issuer=ident.issuer, audience=ident.audience,
                                 tenant=ident.tenant, now=time.time())


def _import(service: RunningService, file: Path, capsys: pytest.CaptureFixture[str],
            token: str) -> tuple[int, dict[str, object]]:
    status = main(["import", "--from", "mem0", "--url", service.base_url, "--workspace",
                   MEM0_WORKSPACE, "--purpose", MEM0_PURPOSE, "--token", token, str(file)])
    out = capsys.readouterr().out
    return status, (json.loads(out) if out.strip() else {})


def test_a_mem0_export_imports_once_and_reports_refusals_and_duplicates(
    service: RunningService, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps(mem0_export.wrapped(), ensure_ascii=False), encoding="utf-8")
    token = _maintainer(service)
    expected = mem0_export.EXPECTED

    status, first = _import(service, export, capsys, token)
    assert status == 0
    assert first["imported"] == expected.imported
    assert first["refused"] == {"INVALID_SCHEMA": sorted(
        m["id"] for m in mem0_export.build()[:expected.refused_secret])}
    duplicates = first["duplicates"]
    assert isinstance(duplicates, dict)
    assert len(duplicates["same_id"]) == expected.same_id
    assert len(duplicates["same_content"]) == expected.same_content
    assert "AKIA" not in json.dumps(first)  # ids and codes only, never content

    bare = tmp_path / "mem0-bare.json"
    bare.write_text(json.dumps(mem0_export.build()), encoding="utf-8")
    status, second = _import(service, bare, capsys, token)
    assert status == 0
    assert second["imported"] == 0
    assert second["already_present"] == expected.imported

    conflict = tmp_path / "mem0-conflict.json"
    conflict.write_text(json.dumps(mem0_export.conflicting()), encoding="utf-8")
    status, third = _import(service, conflict, capsys, token)
    assert status == 1
    assert list(third["refused"]) == ["MIGRATION_LEDGER_INVALID"]  # type: ignore[arg-type]


def test_an_agent_token_cannot_migrate(service: RunningService) -> None:
    agent = service.mint(workspace=MEM0_WORKSPACE, purpose_ref=PURPOSE,
                         capabilities=["capture", "request_admission"])
    body = {"workspace_id": MEM0_WORKSPACE, "purpose_ref": MEM0_PURPOSE,
            "memories": [mem0_export.memory(0, text="agent tries", mem_id="agent-try-1")]}
    response = httpx2.post(service.base_url + "/host/migrations/mem0", json=body,
                           headers={"Authorization": f"Bearer {agent}"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"
