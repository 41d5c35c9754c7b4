"""The TypeScript host kit (clients/typescript) against the real local service.

``npm ci`` (which builds the kit with ``tsc``) and ``npm test`` (the kit's node --test unit
tests) run here, then clients/typescript/interop/against_service.mjs drives the service
with kit-minted tokens and prints one JSON report: the official SDK client lists, captures,
admits and searches; a maintainer token drives ``HostClient`` through a confirmed forget;
each claim rule is broken once by a token forged past the kit, refused by the service, and
refused by the kit under the same rule name; every case of the Python kit's conformance
matrix (``engram_memory_host.conformance``, handed over as JSON so there is one list) is named
alike by the TypeScript kit's raw-claim checks and refused by the service when signed past
them; a session outlives a 2 s token lifetime.
Under ``CI=true`` a missing node is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from engram_memory.local.service import RunningService
from engram_memory.service_home import HOST_KEY_FILE
from engram_memory_host.conformance import (
    agent_violations,
    maintainer_violations,
    valid_agent_claims,
    valid_maintainer_claims,
)

from .conftest import PURPOSE, WORKSPACE
from .ts_support import npm_ci, require_node

KIT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
TIMEOUT_S = 180


def _node(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(args, cwd=KIT, env={**base, **(env or {})}, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)


@pytest.fixture(scope="module")
def kit() -> None:
    require_node()
    npm_ci(KIT)
    built = _node(["npm", "run", "build"])  # npm ci's prepare built it; a kept tree may not be
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]


@pytest.mark.usefixtures("kit")
def test_the_kit_unit_tests_pass() -> None:
    done = _node(["npm", "test"])
    assert done.returncode == 0, done.stdout[-4000:]
    assert "# fail 0" in done.stdout


def _conformance_matrix(service: RunningService) -> dict[str, Any]:
    ident = service.identity
    deployment: dict[str, Any] = {"issuer": ident.issuer, "audience": ident.audience,
                                  "tenant": ident.tenant}
    agent: dict[str, Any] = {**deployment, "workspace": WORKSPACE, "purpose_ref": PURPOSE}

    def listed(cases: dict[str, tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
        return [{"name": name, "claims": claims, "rule": rule}
                for name, (claims, rule) in sorted(cases.items())]

    return {"controls": {"agent": valid_agent_claims(**agent),
                         "maintainer": valid_maintainer_claims(**deployment)},
            "agent": listed(agent_violations(**agent)),
            "maintainer": listed(maintainer_violations(**deployment))}


@pytest.fixture(scope="module")
def report(service: RunningService, kit: None,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ident = service.identity
    cases = tmp_path_factory.mktemp("claims") / "conformance.json"
    cases.write_text(json.dumps(_conformance_matrix(service)), encoding="utf-8")
    done = _node(["node", "interop/against_service.mjs"], {
        "ENGRAM_CLAIM_CASES": str(cases),
        "ENGRAM_BASE_URL": service.base_url,
        "ENGRAM_HOST_KEY_PEM": str(service.home / HOST_KEY_FILE),
        "ENGRAM_ISSUER": ident.issuer, "ENGRAM_AUDIENCE": ident.audience,
        "ENGRAM_TENANT": ident.tenant, "ENGRAM_WORKSPACE": WORKSPACE, "ENGRAM_PURPOSE": PURPOSE,
    })
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stderr[-4000:]
    assert lines, done.stderr[-4000:]
    parsed: dict[str, Any] = json.loads(lines[-1])
    return parsed


def test_a_kit_minted_agent_token_lists_captures_and_searches(report: dict[str, Any]) -> None:
    steps = report["steps"]
    assert len(steps["tools"]) == 6
    assert steps["capture"] is True
    assert steps["admission"] == "accepted", steps
    assert str(steps["recordId"]).startswith("mem_")
    assert steps["searchOk"] is True
    assert steps["searchFound"] is True


def test_a_maintainer_token_drives_the_host_client_through_a_confirmed_forget(
    report: dict[str, Any],
) -> None:
    steps = report["steps"]
    assert steps["listedPending"] is True
    assert steps["decided"] == "approved"
    assert steps["forget"] == "tombstoned"
    assert steps["held"] is True
    assert steps["otherWorkspace"] == "403 FORBIDDEN"


def test_every_claim_rule_is_refused_by_the_service_and_named_by_the_kit(
    report: dict[str, Any],
) -> None:
    assert report["control"] == "accepted"
    assert report["maintainerControl"] == "accepted"
    for case in report["rules"]:
        assert case["kit"] == case["rule"], case
        if case["path"] == "maintainer":
            assert case["service"] == "401", case
        elif case["rule"] == "deadline" and case["service"] == "DEADLINE_EXCEEDED":
            continue  # a deadline in seconds is long past: the call is refused, not the token
        else:
            assert case["service"] == "untrusted", case
    assert {case["rule"] for case in report["rules"]} == {
        "lifetime", "ref", "no-hash", "internal-principal", "capabilities", "deadline",
        "maintainer-scope"}


def test_every_case_of_the_python_conformance_matrix_is_refused_alike_by_the_ts_kit(
    report: dict[str, Any],
) -> None:
    matrix = report["matrix"]
    assert matrix["agentControl"] == "accepted"
    assert matrix["maintainerControl"] == "accepted"
    expected = {("agent", name) for name in agent_violations()} | {
        ("maintainer", name) for name in maintainer_violations()}
    assert {(case["path"], case["name"]) for case in matrix["cases"]} == expected
    refused = {"agent": "untrusted", "maintainer": "401"}
    for case in matrix["cases"]:
        assert case["kit"] == case["rule"], case
        assert case["service"] == refused[case["path"]], case
    assert {case["rule"] for case in matrix["cases"]} == {
        "times", "lifetime", "jti", "ref", "no-hash", "internal-principal", "deadline",
        "capabilities", "agent-perm", "maintainer-perm", "maintainer-scope"}


def test_a_session_outliving_its_token_lifetime_keeps_working(report: dict[str, Any]) -> None:
    steps = report["steps"]
    assert steps["afterExpiry"] == 6
    assert steps["mints"] >= 2
    assert steps["staleRefused"] is True  # without the refresh the same wait is refused


EXAMPLE = KIT.parents[1] / "examples" / "host-typescript"


def test_the_typescript_host_example_runs_its_whole_story(
    service: RunningService, kit: None,
) -> None:
    npm_ci(EXAMPLE)
    base = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    done = subprocess.run(
        ["node", "host.mjs"], cwd=EXAMPLE, capture_output=True, text=True, timeout=TIMEOUT_S,
        check=False, env={**base, "ENGRAM_LOCAL_HOME": str(service.home),
                          "ENGRAM_BASE_URL": service.base_url, "ENGRAM_WORKSPACE": WORKSPACE})
    assert done.returncode == 0, done.stderr[-4000:]
    assert "admission: accepted" in done.stdout
    assert "search found it: true" in done.stdout
    assert "(tombstoned)" in done.stdout
