"""The README's copy-paste session (examples/quickstart.py) works against the real service."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from engram_memory.local.service import RunningService

from .conftest import PURPOSE, WORKSPACE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_quickstart_session_captures_admits_finds_and_reads(
    service: RunningService, mode: str
) -> None:
    token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE,
                         capabilities=["search", "get", "capture", "request_admission"])
    env = {"PATH": os.environ.get("PATH", ""), "TOKEN": token}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", service.mcp_url, "--purpose", PURPOSE,
         "--mode", mode],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok: found and read mem_" in done.stdout
