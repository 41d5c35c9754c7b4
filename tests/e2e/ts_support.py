"""Running the TypeScript MCP SDK interop client (tests/interop/ts) from pytest."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TS_DIR = Path(__file__).resolve().parents[1] / "interop" / "ts"
CLIENT = TS_DIR / "client.mjs"
NPM_TIMEOUT_S = 240
CLIENT_TIMEOUT_S = 60

# The client's exit statuses (see the header of client.mjs).
EXIT_OK, EXIT_SCHEMA, EXIT_PROTOCOL, EXIT_UNEXPECTED = 0, 1, 2, 3


def missing_tools() -> list[str]:
    """The node tool-chain commands absent from PATH (the only reason to skip)."""
    return [tool for tool in ("node", "npm") if shutil.which(tool) is None]


def _installed_matches_lock(directory: Path) -> bool:
    """npm's own record of the installed tree equals the committed lock (nothing to do)."""
    installed_path = directory / "node_modules" / ".package-lock.json"
    if not installed_path.is_file():
        return False
    locked: dict[str, Any] = json.loads((directory / "package-lock.json").read_text())["packages"]
    installed: dict[str, Any] = json.loads(installed_path.read_text())["packages"]
    return {k: v for k, v in locked.items() if k} == installed


def require_node() -> None:
    """Skip without node/npm on a developer box; under ``CI=true`` that is a failure."""
    missing = missing_tools()
    if not missing:
        return
    message = f"the TypeScript tests need {' and '.join(missing)} on PATH"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def npm_ci(directory: Path) -> None:
    """``npm ci`` in ``directory`` unless node_modules already is exactly the lock's tree.

    An exclusive lock serializes concurrent pytest sessions: ``npm ci`` deletes
    node_modules first, which would break a client another session is running.
    """
    lock_path = Path(tempfile.gettempdir()) / "engram-ts-interop-npm.lock"
    with lock_path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if _installed_matches_lock(directory):
            return
        done = subprocess.run(
            ["npm", "ci", "--prefix", str(directory), "--no-audit", "--no-fund",
             "--prefer-offline"],
            capture_output=True, text=True, timeout=NPM_TIMEOUT_S, check=False)
        assert done.returncode == 0, f"npm ci failed:\n{done.stderr[-4000:]}"


def ensure_installed() -> None:
    """The interop client's dependencies (tests/interop/ts)."""
    npm_ci(TS_DIR)


@dataclass(frozen=True)
class ClientRun:
    """One run of client.mjs: its exit status and its one-line JSON report."""

    status: int
    report: dict[str, Any]
    stderr: str

    def calls(self) -> dict[str, dict[str, Any]]:
        """The reported calls by label."""
        return {call["label"]: call for call in self.report["calls"]}

    def __str__(self) -> str:
        return f"exit {self.status}\n{json.dumps(self.report, indent=1)}\n{self.stderr[-2000:]}"


def run_client(url: str, token: str, purpose: str, call: dict[str, Any] | None = None
               ) -> ClientRun:
    """Run the TypeScript client: the journey, or one call when ``call`` is given."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
           "ENGRAM_TOKEN": token, "ENGRAM_PURPOSE": purpose}
    if call is not None:
        env["ENGRAM_CALL"] = json.dumps(call)
    done = subprocess.run(["node", str(CLIENT), url], cwd=TS_DIR, env=env, capture_output=True,
                          text=True, timeout=CLIENT_TIMEOUT_S, check=False)
    lines = done.stdout.strip().splitlines()
    assert lines, f"the client printed nothing (exit {done.returncode}):\n{done.stderr[-4000:]}"
    return ClientRun(done.returncode, json.loads(lines[-1]), done.stderr)
