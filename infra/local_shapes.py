"""The resource shapes local mode creates, generated from the synthesized tenant stack.

``make serve`` and the moto test tiers create their tables and confirmation queue with
``engram_memory.local.provisioning`` / ``gate_setup``; the shapes those create (key schema,
attributes, indexes, billing, stream, TTL attribute, PITR; the queue's visibility timeout and
retention) are read from ``shared/engram_memory/local/stack_shapes.json``, which this
module writes from the template (``python -m infra.local_shapes``). The state machine's
definition is already the one shared ASL file. ``tests/infra/test_local_shapes.py`` fails
when the file and the template disagree (regenerate it and commit it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHAPES_FILE = REPO / "shared" / "engram_memory" / "local" / "stack_shapes.json"
TABLE_OUTPUTS = {"main": "MainTableName", "keys": "KeyTableName",
                 "projection": "ProjectionTableName"}


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


def shapes(template: dict[str, Any]) -> dict[str, Any]:
    """The local-mode shapes of the template's three tables and the confirmation queue."""
    resources = template["Resources"]
    tables = {role: _table(resources[template["Outputs"][output]["Value"]["Ref"]]["Properties"])
              for role, output in TABLE_OUTPUTS.items()}
    [machine] = [r for r in resources.values()
                 if r["Type"] == "AWS::StepFunctions::StateMachine"]
    queue = resources[machine["Properties"]["DefinitionSubstitutions"]["QueueUrl"]["Ref"]]
    queue_props = queue["Properties"]
    return {"tables": tables, "confirmation_queue": {
        name: str(queue_props[name]) for name in ("VisibilityTimeout", "MessageRetentionPeriod")
        if name in queue_props}}


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
