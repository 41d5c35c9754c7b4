"""cfn-lint finds nothing in the synthesized template but the layer rule's intended assert."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from infra.constructs.functions import NO_LAYER_RULE

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra

# W3005: CDK adds DependsOn on each function's role next to its GetAtt (redundant, harmless).
IGNORED = ["W3005"]


def test_cfn_lint_reports_nothing(synthesized: Synthesized) -> None:
    api = pytest.importorskip("cfnlint.api", reason="cfn-lint comes with moto[server]")
    matches = api.lint(json.dumps(synthesized.template),
                       config=api.ManualArgs(regions=["us-east-1"], ignore_checks=IGNORED))
    found = [(m.rule.id, list(m.path)[:2], m.message) for m in matches]
    # Offline synthesis: the always-false assertion that keeps this template undeployable.
    expected = [("W8003", ["Rules", NO_LAYER_RULE])] if NO_LAYER_RULE in synthesized.template.get(
        "Rules", {}) else []
    assert [(rule, path) for rule, path, _ in found] == expected, found
