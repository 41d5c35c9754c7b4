"""The resources local mode creates, generated from the synthesized tenant stack.

``make serve`` and the moto test tiers create their tables, tenant key, confirmation queue
and its DLQ, host event bus, gate log group, gate role and state machine with
``engram_memory.local.provisioning``, which reads ``shared/engram_memory/local/stack_shapes.json``:
this module writes it from the template (``python -m infra.local_shapes``).
``tests/infra/test_local_shapes.py`` fails when the file and the template disagree
(regenerate it and commit it).

- ``tables``: each table's shape (key schema, attributes, indexes, billing, stream, TTL
  attribute, PITR), by the role its stack output names.
- ``resources``: the other resources the functions' environment references, with their
  template properties less their names (local names are local-specific) and with every
  ``Ref``/``Fn::GetAtt`` to a stack resource rewritten to the resource's local name (the
  logical id without CDK's hash; a table's role). The state machine's ``DefinitionString``
  is checked to be the shared ASL file and left out (local mode reads the file).
- ``environment``: each function variable whose template value references one of those.

A key policy statement whose principal is a stack role is left out: local mode runs every
function as the account's one principal, so only the statements for the account apply.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHAPES_FILE = REPO / "shared" / "engram_memory" / "local" / "stack_shapes.json"
ASL_FILE = REPO / "shared" / "engram_memory" / "gate" / "confirmation_gate.asl.json"
TABLE_OUTPUTS = {"main": "MainTableName", "keys": "KeyTableName",
                 "projection": "ProjectionTableName", "ledger": "LedgerTableName"}
# Resource types local mode creates from their properties, and the property that is the
# resource's name (or label) there, which local mode chooses itself.
LOCAL_TYPES = {
    "AWS::KMS::Key": ("Description",),
    "AWS::SQS::Queue": ("QueueName",),
    "AWS::Events::EventBus": ("Name",),
    "AWS::Logs::LogGroup": ("LogGroupName",),
    "AWS::IAM::Role": ("RoleName",),
    "AWS::StepFunctions::StateMachine": ("StateMachineName", "DefinitionString"),
}
_CDK_HASH = re.compile(r"[0-9A-F]{8}$")


class NotLocal(ValueError):
    """The template references something local mode does not stand up."""


def _index(props: dict[str, Any]) -> dict[str, Any]:
    return {name: props[name] for name in ("IndexName", "KeySchema", "Projection")}


def _table(props: dict[str, Any]) -> dict[str, Any]:
    ttl = props.get("TimeToLiveSpecification", {})
    return {
        "GlobalSecondaryIndexes": [_index(gsi) for gsi in props.get("GlobalSecondaryIndexes", [])],
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "BillingMode": props["BillingMode"],
        "StreamViewType": props.get("StreamSpecification", {}).get("StreamViewType"),
        "TtlAttribute": ttl.get("AttributeName") if ttl.get("Enabled") else None,
        "PointInTimeRecovery": bool(props.get("PointInTimeRecoverySpecification", {})
                                    .get("PointInTimeRecoveryEnabled", False)),
    }


def _reference(value: Any) -> tuple[str, str | None] | None:
    if not isinstance(value, dict) or len(value) != 1:
        return None
    if isinstance(value.get("Ref"), str):
        return value["Ref"], None
    att = value.get("Fn::GetAtt")
    if isinstance(att, list) and len(att) == 2:
        return str(att[0]), str(att[1])
    return None


def _references(value: Any) -> set[str]:
    ref = _reference(value)
    if ref is not None:
        return set() if ref[0].startswith("AWS::") else {ref[0]}
    if isinstance(value, dict):
        return set().union(*(_references(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_references(v) for v in value))
    return set()


class _Collector:
    def __init__(self, template: dict[str, Any]) -> None:
        self.resources = template["Resources"]
        self.names = {template["Outputs"][output]["Value"]["Ref"]: role
                      for role, output in TABLE_OUTPUTS.items()}
        self.collected: dict[str, dict[str, Any]] = {}

    def name(self, lid: str) -> str:
        if lid not in self.names:
            kind = self.resources[lid]["Type"]
            if kind not in LOCAL_TYPES:
                raise NotLocal(f"{lid} ({kind}) is not stood up by local mode")
            self.names[lid] = _CDK_HASH.sub("", lid)
            self.collected[self.names[lid]] = self._resource(lid)
        return self.names[lid]

    def rewrite(self, value: Any) -> Any:
        ref = _reference(value)
        if ref is not None and not ref[0].startswith("AWS::"):
            name = self.name(ref[0])
            return {"Ref": name} if ref[1] is None else {"Fn::GetAtt": [name, ref[1]]}
        if isinstance(value, dict):
            return {k: self.rewrite(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.rewrite(v) for v in value]
        return value

    def _resource(self, lid: str) -> dict[str, Any]:
        kind = self.resources[lid]["Type"]
        props = dict(self.resources[lid].get("Properties", {}))
        if kind == "AWS::StepFunctions::StateMachine" and \
                props.get("DefinitionString") != ASL_FILE.read_text(encoding="utf-8"):
            raise NotLocal(f"{lid}: the definition is not the shared ASL file")
        if kind == "AWS::KMS::Key" and "KeyPolicy" in props:
            policy = dict(props["KeyPolicy"])
            policy["Statement"] = [s for s in policy["Statement"]
                                   if not _references(s.get("Principal"))]
            props["KeyPolicy"] = policy
        kept = {k: v for k, v in props.items() if k not in LOCAL_TYPES[kind]}
        return {"Type": kind, "Properties": self.rewrite(kept)}


def shapes(template: dict[str, Any]) -> dict[str, Any]:
    """What local mode creates for ``template`` (see the module doc)."""
    resources = template["Resources"]
    tables = {role: _table(resources[template["Outputs"][output]["Value"]["Ref"]]["Properties"])
              for role, output in TABLE_OUTPUTS.items()}
    collector = _Collector(template)
    environment: dict[str, Any] = {}
    for resource in resources.values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        variables = resource["Properties"].get("Environment", {}).get("Variables", {})
        for key, value in variables.items():
            ref = _reference(value)
            if ref is None or ref[0] not in resources or \
                    collector.names.get(ref[0]) in TABLE_OUTPUTS:
                continue
            if resources[ref[0]]["Type"] in LOCAL_TYPES:
                environment[key] = collector.rewrite(value)
    return {"tables": tables, "resources": collector.collected, "environment": environment}


def render(template: dict[str, Any]) -> str:
    """The file's text for ``template``."""
    return json.dumps(shapes(template), indent=2, sort_keys=True) + "\n"


def main() -> int:
    """Synthesize the example tenant offline and write the shapes file."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    import tempfile

    from aws_cdk import App

    from infra.app import build_app
    from infra.constructs.functions import SYNTH_WITHOUT_LAYER

    with tempfile.TemporaryDirectory() as outdir:
        app, stack = build_app(App(outdir=outdir, context={SYNTH_WITHOUT_LAYER: "true"}))
        app.synth()
        template = json.loads((Path(outdir) / f"{stack.stack_name}.template.json").read_text())
    SHAPES_FILE.write_text(render(template), encoding="utf-8")
    print(f"wrote {SHAPES_FILE.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
