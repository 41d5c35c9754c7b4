"""cdk-nag finds nothing unacknowledged, and the functions ship real handlers."""

from __future__ import annotations

import ast
import json
from typing import TYPE_CHECKING

import pytest

from infra.names import FUNCTIONS
from tests.infra.template_view import function_logical_ids

if TYPE_CHECKING:
    from pathlib import Path

    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra


def _messages(synthesized: Synthesized, kind: str) -> list[str]:
    return [f"{path}: {entry['data']}" for path, entries in synthesized.metadata.items()
            for entry in entries if entry["type"] == kind]


def test_synthesis_passes_the_cdk_nag_aws_solutions_checks(synthesized: Synthesized) -> None:
    assert synthesized.validation_error is None
    (aws_solutions,) = synthesized.report["pluginReports"]
    assert aws_solutions["pluginName"] == "AwsSolutions"
    assert aws_solutions["violations"] == []
    assert aws_solutions["conclusion"] == "success"


def test_every_acknowledged_finding_carries_a_specific_reason(
        synthesized: Synthesized) -> None:
    (aws_solutions,) = synthesized.report["pluginReports"]
    acknowledged = aws_solutions["suppressedViolations"]
    assert acknowledged, "the acknowledgments were not applied"
    for finding in acknowledged:
        assert len(finding["reason"]) >= 60, finding["ruleName"]
        # Acknowledged on the construct that owns the finding, never stack-wide.
        assert finding["acknowledgedAt"] != synthesized.stack_name


def test_synthesis_reports_no_error_or_warning_annotations(synthesized: Synthesized) -> None:
    assert _messages(synthesized, "aws:cdk:error") == []
    assert _messages(synthesized, "aws:cdk:warning") == []


def _asset_keys(synthesized: Synthesized) -> set[str]:
    template = synthesized.template
    return {template["Resources"][lid]["Properties"]["Code"]["S3Key"]
            for lid in function_logical_ids(template).values()}


def _asset_dir(synthesized: Synthesized) -> Path:
    (key,) = _asset_keys(synthesized)
    return synthesized.outdir / f"asset.{key.removesuffix('.zip')}"


def test_every_function_shares_one_code_asset(synthesized: Synthesized) -> None:
    assert len(_asset_keys(synthesized)) == 1


def test_the_code_asset_holds_the_package_and_every_handler(synthesized: Synthesized) -> None:
    asset = _asset_dir(synthesized)
    assert (asset / "engram_memory" / "__init__.py").is_file()
    assert (asset / "engram_memory" / "gate" / "confirmation_gate.asl.json").is_file()
    assert not list(asset.rglob("__pycache__"))
    missing = []
    for name in FUNCTIONS:
        handler = asset / "functions" / name / "handler.py"
        if not handler.is_file():
            missing.append(name)
            continue
        tree = ast.parse(handler.read_text(encoding="utf-8"))
        defined = {getattr(node, "name", None) for node in tree.body} | {
            t.id for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}
        if "lambda_handler" not in defined:
            missing.append(name)
    assert missing == []


def test_the_validation_report_is_written_beside_the_templates(
        synthesized: Synthesized) -> None:
    report = json.loads((synthesized.outdir / "validation-report.json").read_text())
    assert report["title"] == "Validation Report"
