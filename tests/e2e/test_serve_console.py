"""``engram-memory serve``'s console: what a person needs, not the handlers' JSON logs.

The banner names the endpoint, the review page and a maintainer token; each confirmation
waiting for a decision prints one line pointing at the review page; a refused tool call
(logged at INFO by the tool runtime) prints nothing at the default level.
"""

from __future__ import annotations

import asyncio
import queue
import re
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import httpx2

from .conftest import connect
from .test_cli_service import clean_env, interrupt, token
from .test_memory_flow import capture_arguments, value

PURPOSE = "purpose:cli"
HOSTILE = "evil\x1b[2J\x07principal"


def _reader(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def _until(lines: queue.Queue[str], seen: list[str], pattern: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        seen.append(line)
        if re.search(pattern, line):
            return line
    raise AssertionError(f"no line matching {pattern!r} in {seen!r}")


def test_serve_prints_the_review_page_and_one_line_per_waiting_confirmation(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_memory.cli.main", "serve", "--port", "0",
         "--data-dir", str(data_dir), "--tenant", "t-console"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=clean_env(data_dir / "home"), start_new_session=True)  # Ctrl-C: to the group
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    seen: list[str] = []
    try:
        review = _until(lines, seen, r"review page\s+(http://\S+/host/review)", 60)
        base = re.search(r"(http://\S+)/host/review", review)
        assert base is not None
        url = base.group(1)
        _until(lines, seen, r"^\s+eyJ", 10)  # the maintainer token, ready to paste
        maintainer = next(s.strip() for s in seen if s.strip().startswith("eyJ"))

        async def admitted_then_refused() -> str:
            async with connect(url + "/mcp", token(data_dir), "auto") as client:
                captured = value(await client.call_tool(
                    "engram_memory_capture", capture_arguments("Console fact.", PURPOSE)))
                admitted = value(await client.call_tool("engram_memory_request_admission", {
                    "candidate_id": captured["candidate_id"],
                    "idempotency_key": "console-" + secrets.token_hex(8)}))
                # A refusal the tool runtime logs at INFO: silent at the default level.
                refused = await client.call_tool("engram_memory_get", {
                    "record_id": "mem_" + "a" * 52, "purpose_ref": PURPOSE})
                assert refused.structured_content["ok"] is False
                return str(admitted["outcome"]["record_id"])

        record_id = asyncio.run(admitted_then_refused())
        asked = httpx2.post(url + "/host/confirmations", json={
            "workspace_id": "w1", "capability": "forget", "principal": HOSTILE,
            "arguments": {"record_id": record_id,
                          "idempotency_key": "console-forget-" + secrets.token_hex(8),
                          "reason_ref": "reason:cleanup"}, "ttl_seconds": 60},
            headers={"Authorization": f"Bearer {maintainer}"}, timeout=30)
        assert asked.status_code == 201, asked.text
        waiting = _until(lines, seen, r"^waiting for a human: forget", 20)
        assert record_id in waiting
        assert waiting.rstrip().endswith(url + "/host/review")
        assert "\x1b" not in waiting
        assert "\x07" not in waiting
        assert "evil?[2J?principal" in waiting
    finally:
        seen.append(interrupt(proc))
    output = "".join(seen)
    assert not [line for line in output.splitlines() if line.lstrip().startswith("{")], output
