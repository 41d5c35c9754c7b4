"""``engram-memory serve`` as a user runs it: a subprocess, Ctrl-C, and a restart."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from engram_memory.cli import main as cli
from engram_memory.domain.ranking import PROJECTION_GENERATION

from .conftest import connect
from .test_memory_flow import capture_arguments, value

PURPOSE = "purpose:cli"
CAPS = "search,get,capture,request_admission"


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ENGRAM_", "AWS_", "MOTO_", "POWERTOOLS_"))}
    env["ENGRAM_LOCAL_HOME"] = str(home)
    return env


def serve(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_memory.cli.main", "serve", "--port", "0",
         "--data-dir", str(data_dir), "--tenant", "t-cli"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=clean_env(data_dir / "home"), start_new_session=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        match = re.search(r"MCP endpoint\s+(http://\S+/mcp)", line)
        if match:
            return proc, match.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    pytest.fail("the local service did not start")


def interrupt(proc: subprocess.Popen[str]) -> str:
    # As a terminal's Ctrl-C does: to the whole process group (moto's process is not in it,
    # so it is still there to take the snapshot; the handler workers are, and ignore it).
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    deadline = time.monotonic() + 15
    while session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session_members(proc.pid) == [], "a process of the service outlived it"
    return out


def session_members(sid: int) -> list[str]:
    """Command lines of the running (not zombie) processes in session ``sid``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(cmdline.decode(errors="replace"))
    return members


def token(data_dir: Path) -> str:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert cli.main(["token", "--data-dir", str(data_dir), "--workspace", "w1",
                         "--purpose", PURPOSE, "--capabilities", CAPS]) == 0
    return buffer.getvalue().strip()


async def capture_and_admit(url: str, tok: str, text: str) -> str:
    async with connect(url, tok, "auto") as client:
        args = capture_arguments(text, purpose=PURPOSE)
        captured = value(await client.call_tool("engram_memory_capture", args))
        admitted = value(await client.call_tool("engram_memory_request_admission", {
            "candidate_id": captured["candidate_id"],
            "idempotency_key": "cli-admit-" + secrets.token_hex(8)}))
        record_id: str = admitted["outcome"]["record_id"]
        return record_id


async def capture_only(url: str, tok: str, text: str) -> str:
    async with connect(url, tok, "auto") as client:
        args = capture_arguments(text, purpose=PURPOSE)
        candidate_id: str = value(await client.call_tool("engram_memory_capture",
                                                         args))["candidate_id"]
        return candidate_id


async def read_and_admit(url: str, tok: str, record_id: str, candidate_id: str
                         ) -> tuple[dict[str, Any], dict[str, Any]]:
    async with connect(url, tok, "legacy") as client:
        got = value(await client.call_tool(
            "engram_memory_get", {"record_id": record_id, "purpose_ref": PURPOSE}))
        admitted = value(await client.call_tool("engram_memory_request_admission", {
            "candidate_id": candidate_id,
            "idempotency_key": "cli-admit-" + secrets.token_hex(8)}))
        return got, admitted


@pytest.mark.slow
def test_serve_stops_on_ctrl_c_and_a_data_dir_keeps_records_and_pending_candidates(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    proc, url = serve(data_dir)
    try:
        record_id = asyncio.run(capture_and_admit(url, token(data_dir),
                                                  "The staging database is rebuilt nightly."))
        # A pending candidate's data key is wrapped by the tenant KMS key: it must survive.
        candidate_id = asyncio.run(capture_only(url, token(data_dir),
                                                "Backups are verified every Monday."))
        # The calls ran in handler worker processes of the service (serve's default).
        workers = [c for c in session_members(proc.pid) if "spawn_main" in c]
        assert workers, session_members(proc.pid)
    finally:
        out = interrupt(proc)
    assert "engram-memory stopped" in out
    assert (data_dir / "state.json").is_file()
    assert (data_dir / "host_key.pem").stat().st_mode & 0o077 == 0

    proc, url = serve(data_dir)
    try:
        got, admitted = asyncio.run(read_and_admit(url, token(data_dir), record_id,
                                                   candidate_id))
    finally:
        interrupt(proc)
    assert got["record"]["record_id"] == record_id
    assert admitted["outcome"]["status"] == "accepted"


async def search_ids(url: str, tok: str, query: str) -> list[str]:
    async with connect(url, tok, "auto") as client:
        found = value(await client.call_tool("engram_memory_search", {
            "query": query, "purpose_ref": PURPOSE, "limit": 10}))
        return [packet["record"]["record_id"] for packet in found["records"]]


def _as_generation_one(data_dir: Path) -> None:
    """Rewrite the snapshot as the previous release left it: no generation recorded and
    projection keys without a generation part (``POST#{t}#{w}#{term}`` ...)."""
    path = data_dir / "state.json"
    snapshot = json.loads(path.read_text(encoding="utf-8"))
    del snapshot["projection_generation"]
    for name, rows in snapshot["tables"].items():
        if name.endswith("-projection"):
            for row in rows:
                row["pk"] = {"S": row["pk"]["S"].replace(f"#{PROJECTION_GENERATION}", "")}
    path.write_text(json.dumps(snapshot), encoding="utf-8")


def _projection_keys(data_dir: Path) -> list[str]:
    snapshot = json.loads((data_dir / "state.json").read_text(encoding="utf-8"))
    return [row["pk"]["S"] for name, rows in snapshot["tables"].items()
            if name.endswith("-projection") for row in rows]


@pytest.mark.slow
def test_a_data_dir_indexed_by_an_older_tokenizer_is_rebuilt_before_serving(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    proc, url = serve(data_dir)
    try:
        record_id = asyncio.run(capture_and_admit(url, token(data_dir),
                                                  "The staging databases were rebuilt nightly."))
    finally:
        interrupt(proc)
    _as_generation_one(data_dir)
    assert not any(PROJECTION_GENERATION in key for key in _projection_keys(data_dir))

    proc, url = serve(data_dir)
    try:
        # Another inflection of each word: only the stemming index built at start finds it.
        found = asyncio.run(search_ids(url, token(data_dir), "rebuilding staged database"))
    finally:
        interrupt(proc)
    assert found == [record_id]
    keys = _projection_keys(data_dir)
    assert keys
    assert all(key.split("#")[3] == PROJECTION_GENERATION for key in keys)
    assert json.loads((data_dir / "state.json").read_text())["projection_generation"] == (
        PROJECTION_GENERATION)
