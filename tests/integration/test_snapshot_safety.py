"""Importing a request-path handler leaves nothing unique behind (SnapStart-safe).

With ``snap_start`` (docs/performance.md, "SnapStart") Lambda snapshots the process after
import and restores that one image into many execution environments. Clients,
credentials, the page-cursor secret and threads must therefore be created on the first
invocation, never at import: this imports every SnapStart handler, in a fresh interpreter
with a deployed function's environment, and checks that none exists afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import importlib, json, sys, threading
import botocore.session

made = []
original = botocore.session.Session.create_client
def create_client(self, service_name, *args, **kwargs):
    made.append(service_name)
    return original(self, service_name, *args, **kwargs)
botocore.session.Session.create_client = create_client

before = threading.active_count()
for name in sys.argv[1:]:
    importlib.import_module(f"functions.{name}.handler")
from engram_memory import concurrency
print(json.dumps({"clients": made, "threads": threading.active_count() - before,
                  "pool": bool(concurrency._pools)}))
"""


def test_importing_the_request_path_creates_no_client_no_secret_and_no_thread() -> None:
    from infra.names import SNAP_START_FUNCTIONS

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ENGRAM_"))}
    env.update({
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "shared")]),
        "LAMBDA_TASK_ROOT": str(ROOT),  # tracing on, as deployed
        "AWS_REGION": "us-east-1",
        "ENGRAM_PAGE_CURSOR_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:x",
    })
    out = subprocess.run([sys.executable, "-c", _PROBE, *SNAP_START_FUNCTIONS], env=env,
                         cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    # A secret fetch would need a secretsmanager client: no client at all covers it.
    assert found == {"clients": [], "threads": 0, "pool": False}
