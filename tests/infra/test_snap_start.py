"""Lambda SnapStart on the request path, opt-in per tenant (docs/performance.md, "SnapStart").

With ``snap_start: true`` the tools, the MCP endpoint and the host API run from a snapshot
of a published version and every caller goes through their ``live`` alias (a snapshot
never serves $LATEST): API Gateway, the endpoint's invocations of the tools, the host
API's of capture and request_admission, and the IAM grants that allow those (the alias
only). Without it (the default: the snapshot cache is billed per GB-second) nothing
changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from engram_memory.env_names import FUNCTION_PREFIX as ENV_FUNCTION_PREFIX

from infra.names import FUNCTIONS, SNAP_START_FUNCTIONS, TOOL_FUNCTIONS
from tests.infra.conftest import Synthesized
from tests.infra.template_view import actions, function_logical_ids, refers_to, role_of

EXAMPLE = Path(__file__).resolve().parents[2] / "infra" / "config" / "example-tenant.json"


@pytest.fixture(scope="module")
def snap_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example tenant with ``snap_start: true``, synthesized with cdk-nag."""
    from aws_cdk import App

    from infra.app import build_app
    from infra.constructs.functions import SYNTH_WITHOUT_LAYER

    outdir = tmp_path_factory.mktemp("cdk-snap")
    config = json.loads(EXAMPLE.read_text())
    config["snap_start"] = True
    path = outdir / "tenant.json"
    path.write_text(json.dumps(config))
    app, stack = build_app(App(outdir=str(outdir / "out"),
                               context={"config": str(path), SYNTH_WITHOUT_LAYER: "true"}))
    app.synth()  # raises on any unacknowledged cdk-nag finding
    template: dict[str, Any] = json.loads(
        (outdir / "out" / f"{stack.stack_name}.template.json").read_text())
    return template


def _of_type(template: dict[str, Any], cfn_type: str) -> dict[str, Any]:
    return {lid: r for lid, r in template["Resources"].items() if r["Type"] == cfn_type}


def _aliases(template: dict[str, Any]) -> dict[str, str]:
    """Function name -> logical id of its alias."""
    functions = {lid: name for name, lid in function_logical_ids(template).items()}
    out = {}
    for lid, alias in _of_type(template, "AWS::Lambda::Alias").items():
        props = alias["Properties"]
        assert props["Name"] == "live"
        version = template["Resources"][props["FunctionVersion"]["Fn::GetAtt"][0]]
        out[functions[version["Properties"]["FunctionName"]["Ref"]]] = lid
    return out


def test_the_default_tenant_has_no_snapshot_and_no_alias(synthesized: Synthesized) -> None:
    template = synthesized.template
    assert not _of_type(template, "AWS::Lambda::Alias")
    for lid in function_logical_ids(template).values():
        assert "SnapStart" not in template["Resources"][lid]["Properties"]


def test_snap_start_covers_exactly_the_request_path_on_its_supported_runtime(
        snap_template: dict[str, Any]) -> None:
    functions = function_logical_ids(snap_template)
    for name in FUNCTIONS:
        props = snap_template["Resources"][functions[name]]["Properties"]
        expected = {"ApplyOn": "PublishedVersions"} if name in SNAP_START_FUNCTIONS else None
        assert props.get("SnapStart") == expected, name
        # Python 3.12+ managed runtimes, x86_64 and arm64 (docs/performance.md cites it).
        assert (props["Runtime"], props["Architectures"]) == ("python3.13", ["arm64"])
    assert set(_aliases(snap_template)) == set(SNAP_START_FUNCTIONS)


def test_every_caller_goes_through_the_alias_and_may_invoke_nothing_else(
        snap_template: dict[str, Any]) -> None:
    functions, aliases = function_logical_ids(snap_template), _aliases(snap_template)
    resources = snap_template["Resources"]
    endpoint_env = resources[functions["mcp_endpoint"]]["Properties"]["Environment"]
    for tool in TOOL_FUNCTIONS:
        name = endpoint_env["Variables"][f"{ENV_FUNCTION_PREFIX}{tool.upper()}"]
        assert refers_to(name, aliases[tool]), tool  # "<function name>:live"
        assert json.dumps(name).endswith('":live"]]}'), tool
    host_env = resources[functions["host_api"]]["Properties"]["Environment"]["Variables"]
    # request_admission adjudicates; capture + request_admission carry a mem0 migration.
    host_callees = ("capture", "request_admission")
    for callee in host_callees:
        assert ":live" in json.dumps(host_env[f"{ENV_FUNCTION_PREFIX}{callee.upper()}"]), callee
    for caller, callees in (("mcp_endpoint", TOOL_FUNCTIONS), ("host_api", host_callees)):
        invoke = [s for s in _statements(snap_template, caller)
                  if "lambda:InvokeFunction" in actions(s)]
        granted = [r for s in invoke for r in (s["Resource"] if isinstance(s["Resource"], list)
                                               else [s["Resource"]])]
        assert sorted(json.dumps(r) for r in granted) == sorted(
            json.dumps({"Ref": aliases[callee]}) for callee in callees), caller
    integrations = _of_type(snap_template, "AWS::ApiGatewayV2::Integration").values()
    targets = [i["Properties"]["IntegrationUri"] for i in integrations]
    for entry in ("mcp_endpoint", "host_api"):
        assert any(refers_to(uri, aliases[entry]) for uri in targets), entry
        assert not any(refers_to(uri, functions[entry]) for uri in targets), entry


def _statements(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    role = role_of(template, function)
    out: list[dict[str, Any]] = []
    for r in _of_type(template, "AWS::IAM::Policy").values():
        if {"Ref": role} in r["Properties"]["Roles"]:
            out += r["Properties"]["PolicyDocument"]["Statement"]
    return out
