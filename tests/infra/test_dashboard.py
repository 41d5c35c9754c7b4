"""The operator dashboard: every metric it plots is one the code or AWS actually emits.

The synthesized template's dashboard body is resolved (CloudFormation tokens become
markers naming the resource they point at) and each metric row is checked:

- ``EngramMemory`` metrics against what the code publishes (``metric_sources``: names,
  namespace, service dimension and cold starts, read from the code);
- AWS metrics against the metric names AWS documents per namespace (the list below,
  mirrored in docs/dashboard.md), with each dimension pointing at a resource of the kind it
  names.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import CATALOG

from infra.constructs.functions import service_name
from infra.names import FUNCTIONS, METRICS_NAMESPACE
from tests.infra.conftest import Synthesized
from tests.infra.metric_sources import COLD_START, Publisher, publishers
from tests.infra.template_view import function_logical_ids

# AWS's own metrics the dashboard may use: namespace → (metric names, dimension → the
# CloudFormation type its value must come from). Sources: the Lambda, SQS, Step Functions
# and API Gateway (HTTP API) metric pages of the AWS documentation (docs/dashboard.md).
AWS_METRICS: dict[str, tuple[frozenset[str], dict[str, str]]] = {
    "AWS/Lambda": (frozenset({"Invocations", "Errors", "Throttles", "Duration",
                              "IteratorAge", "ConcurrentExecutions"}),
                   {"FunctionName": "AWS::Lambda::Function"}),
    "AWS/SQS": (frozenset({"ApproximateNumberOfMessagesVisible",
                           "ApproximateAgeOfOldestMessage"}),
                {"QueueName": "AWS::SQS::Queue"}),
    "AWS/States": (frozenset({"ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed",
                              "ExecutionsTimedOut", "ExecutionsAborted", "ExecutionTime"}),
                   {"StateMachineArn": "AWS::StepFunctions::StateMachine"}),
    "AWS/ApiGateway": (frozenset({"Count", "4xx", "5xx", "Latency", "IntegrationLatency"}),
                       {"ApiId": "AWS::ApiGatewayV2::Api"}),
}
_TOKEN = re.compile(r"^§(Ref|GetAtt):([A-Za-z0-9]+)(?:\.([A-Za-z]+))?§$")


def _token(part: dict[str, Any]) -> str:
    if "Ref" in part:
        return f"§Ref:{part['Ref']}§"
    logical_id, attribute = part["Fn::GetAtt"]
    return f"§GetAtt:{logical_id}.{attribute}§"


def dashboard_body(synthesized: Synthesized) -> dict[str, Any]:
    """The one dashboard's body, its tokens replaced by markers."""
    (dashboard,) = synthesized.resources("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(p if isinstance(p, str) else _token(p) for p in parts)
    parsed: dict[str, Any] = json.loads(text)
    return parsed


def metric_rows(body: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, metric name, dimensions) of every metric row (math expressions aside)."""
    rows = []
    for widget in body["widgets"]:
        for row in widget.get("properties", {}).get("metrics", []):
            if isinstance(row[0], dict):  # a math expression over the rows beside it
                continue
            values = [v for v in row if not isinstance(v, dict)]
            namespace, name, *flat = values
            rows.append((namespace, name, dict(zip(flat[::2], flat[1::2], strict=True))))
    return rows


def problems(rows: list[tuple[str, str, dict[str, str]]], template: dict[str, Any],
             published: dict[tuple[str, str], Publisher]) -> list[str]:
    """Every row that names a metric nobody emits, or a dimension pointing elsewhere."""
    found = []
    resources = template["Resources"]
    for namespace, name, dimensions in rows:
        where = f"{namespace}/{name} {dimensions}"
        if namespace in AWS_METRICS:
            names, kinds = AWS_METRICS[namespace]
            if name not in names or set(dimensions) != set(kinds):
                found.append(f"not a documented AWS metric: {where}")
                continue
            for dimension, value in dimensions.items():
                marker = _TOKEN.match(value)
                if marker is None or resources.get(marker[2], {}).get("Type") != kinds[dimension]:
                    found.append(f"{dimension} is not a {kinds[dimension]}: {where}")
            continue
        publisher = published.get((namespace, dimensions.get("service", "")))
        if publisher is None or not publisher.publishes(name, set(dimensions)):
            found.append(f"not published by the code: {where}")
        elif name == COLD_START:
            marker = _TOKEN.match(dimensions["function_name"])
            if marker is None or resources.get(marker[2], {}).get("Type") != \
                    "AWS::Lambda::Function":
                found.append(f"function_name is not a function: {where}")
    return found


@pytest.fixture(scope="module")
def body(synthesized: Synthesized) -> dict[str, Any]:
    return dashboard_body(synthesized)


def test_every_metric_on_the_dashboard_is_emitted_by_the_code_or_aws(
        synthesized: Synthesized, body: dict[str, Any]) -> None:
    rows = metric_rows(body)
    assert len(rows) > 100
    assert problems(rows, synthesized.template, publishers()) == []


def test_the_check_refuses_a_metric_nothing_emits(synthesized: Synthesized) -> None:
    published = publishers()
    function = "§Ref:" + function_logical_ids(synthesized.template)["search"] + "§"
    invented = [
        (METRICS_NAMESPACE, "search.okay", {"service": "engram-memory"}),
        (METRICS_NAMESPACE, "search.ok", {"service": "engram-memory", "tool": "search"}),
        (METRICS_NAMESPACE, "confirmation.requested", {"service": "engram-memory"}),
        ("AWS/Lambda", "ColdStarts", {"FunctionName": function}),
        ("AWS/Lambda", "Errors", {"FunctionName": "§Ref:GateConfirmationGate§"}),
        ("AWS/DynamoDB", "ThrottledRequests", {"TableName": "x"}),
    ]
    assert len(problems(invented, synthesized.template, published)) == len(invented)


def test_the_code_publishes_what_the_dashboard_groups_by() -> None:
    published = publishers()
    tools = published[(METRICS_NAMESPACE, "engram-memory")]
    for tool in Tool:
        assert tools.publishes(f"{tool.value}.ok", {"service"})
    for code in CATALOG:
        assert tools.publishes(f"error.{code}", {"service"})
    for adjudication in ("adjudication.ok", "adjudication.inspect"):
        assert tools.publishes(adjudication, {"service"})
    host = published[(METRICS_NAMESPACE, "engram-host-api")]
    for decision in ("requested", "approve", "reject"):
        assert host.publishes(f"confirmation.{decision}", {"service"})
    # Every function flushes a cold-start metric under its own service name.
    for function in FUNCTIONS:
        assert published[(METRICS_NAMESPACE, service_name(function))].cold_start, function


def test_the_dashboard_covers_every_function_tool_and_error_code(
        synthesized: Synthesized, body: dict[str, Any]) -> None:
    rows = metric_rows(body)
    functions = {f"§Ref:{lid}§": name
                 for name, lid in function_logical_ids(synthesized.template).items()}
    for statistic in ("p50", "p95", "p99"):
        (widget,) = [w for w in body["widgets"]
                     if w["properties"].get("title", "").startswith(f"Duration {statistic}")]
        plotted = {functions[row[3]] for row in widget["properties"]["metrics"]
                   if row[1] == "Duration" and row[-1]["stat"] == statistic}
        assert plotted == set(FUNCTIONS)
    names = {name for namespace, name, _ in rows if namespace == METRICS_NAMESPACE}
    assert {f"{tool.value}.ok" for tool in Tool} <= names
    assert {f"error.{code}" for code in CATALOG} <= names
    assert {"adjudication.ok", "adjudication.inspect"} <= names
    cold = {functions[d["function_name"]] for _, name, d in rows if name == COLD_START}
    assert cold == set(FUNCTIONS)
    aws = {(namespace, name) for namespace, name, _ in rows}
    for expected in (("AWS/Lambda", "Throttles"), ("AWS/Lambda", "IteratorAge"),
                     ("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
                     ("AWS/States", "ExecutionsStarted")):
        assert expected in aws


def test_the_dashboard_has_no_cdk_nag_finding(synthesized: Synthesized) -> None:
    assert synthesized.validation_error is None
