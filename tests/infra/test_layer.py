"""No function deploys without its dependency layer (the package step's output)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from infra.constructs.functions import (
    NO_LAYER_RULE,
    SYNTH_WITHOUT_LAYER,
    EngramFunctions,
    MissingLayerError,
)
from infra.tenant_config import load_config
from tests.infra.template_view import function_logical_ids

if TYPE_CHECKING:
    from pathlib import Path

    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra


def _functions_template(tmp_path: Path, layer_dir: Path,
                        context: dict[str, str] | None = None) -> dict[str, Any]:
    from aws_cdk import App, Stack
    from aws_cdk.assertions import Template

    app = App(outdir=str(tmp_path / "cdk.out"), context=context or {})
    stack = Stack(app, "Functions")
    EngramFunctions(stack, "Functions", config=load_config(), environment={},
                    layer_dir=layer_dir)
    template: dict[str, Any] = Template.from_stack(stack).to_json()
    return template


def test_a_missing_layer_stops_synthesis(tmp_path: Path) -> None:
    with pytest.raises(MissingLayerError, match=r"python infra/package\.py"):
        _functions_template(tmp_path, tmp_path / "no-layer")


def test_allowed_without_the_layer_the_template_refuses_to_deploy(tmp_path: Path) -> None:
    template = _functions_template(tmp_path, tmp_path / "no-layer",
                                   {SYNTH_WITHOUT_LAYER: "true"})
    (assertion,) = template["Rules"][NO_LAYER_RULE]["Assertions"]
    left, right = assertion["Assert"]["Fn::Equals"]
    assert left != right  # always false: CloudFormation fails create and update
    assert "python infra/package.py" in assertion["AssertDescription"]


def test_with_the_layer_every_function_loads_it(tmp_path: Path) -> None:
    layer = tmp_path / "lambda"
    (layer / "python" / "pydantic").mkdir(parents=True)
    (layer / "python" / "pydantic" / "__init__.py").write_text("")
    template = _functions_template(tmp_path, layer)
    assert NO_LAYER_RULE not in template.get("Rules", {})
    (layer_lid,) = [lid for lid, r in template["Resources"].items()
                    if r["Type"] == "AWS::Lambda::LayerVersion"]
    props = template["Resources"][layer_lid]["Properties"]
    assert props["CompatibleRuntimes"] == ["python3.13"]
    assert props["CompatibleArchitectures"] == ["arm64"]
    for lid in function_logical_ids(template).values():
        assert template["Resources"][lid]["Properties"]["Layers"] == [{"Ref": layer_lid}]


def test_the_stack_never_ships_functions_without_their_dependencies(
        synthesized: Synthesized) -> None:
    template = synthesized.template
    layered = all(template["Resources"][lid]["Properties"].get("Layers")
                  for lid in function_logical_ids(template).values())
    assert layered or NO_LAYER_RULE in template.get("Rules", {})
