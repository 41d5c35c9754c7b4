"""examples/host-python/host.py runs against the real local service, as its README says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engram_memory.local.service import RunningService

from .conftest import WORKSPACE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "host-python" / "host.py"


def test_the_python_host_example_remembers_finds_and_forgets_through_a_confirmation(
    service: RunningService,
) -> None:
    env = {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--local-home", str(service.home),
         "--workspace", WORKSPACE, "--approve-as", "example-reviewer"],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "granted tools: ['engram_memory_search', 'engram_memory_get'" in done.stdout
    assert "search found it: True" in done.stdout
    assert "forget: tombstoned" in done.stdout
    assert "remembered, found, forgotten" in done.stdout, done.stdout
