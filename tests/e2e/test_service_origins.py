"""Each started local service allows exactly its own origins plus the configured
``ENGRAM_ALLOWED_ORIGINS`` (on the host routes and ``/mcp``): a service started after
another in the same process inherits none of its predecessor's origins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGURED = "https://app.example"


@pytest.mark.slow
def test_a_second_service_in_one_process_allows_only_its_own_and_configured_origins(
        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ENGRAM_"))}
    env["ENGRAM_ALLOWED_ORIGINS"] = CONFIGURED
    probe = subprocess.run([sys.executable, "-m", "tests.e2e.origins_probe", str(tmp_path)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
                           check=False)
    assert probe.returncode == 0, probe.stderr[-2000:]
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    statuses = report["statuses"]
    assert statuses["first"] == {"host": 403, "mcp": 403}  # the predecessor's origin
    assert statuses["own"]["host"] == 200  # the review page it serves
    assert statuses["configured"]["host"] == 200
    for allowed in ("own", "configured"):  # past the Origin check on /mcp too
        assert statuses[allowed]["mcp"] != 403
    assert report["after_stop"] == {"origins": CONFIGURED}
