"""One synthesis of the example tenant for the whole infra tier (it costs ~1 GB and seconds).

The app is built exactly as ``python infra/app.py`` builds it (cdk-nag registered); its
cloud assembly, validation report and metadata are read from the output directory, so no
assertion synthesizes again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


@dataclass(frozen=True)
class Synthesized:
    """What one synthesis produced."""

    outdir: Path
    stack_name: str
    template: dict[str, Any]
    report: dict[str, Any]
    metadata: dict[str, list[dict[str, Any]]]
    validation_error: str | None

    def resources(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        """Resources of one CloudFormation type by logical id."""
        return {lid: r for lid, r in self.template["Resources"].items() if r["Type"] == cfn_type}


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """Synthesize the example tenant once (validation failures are recorded, not raised)."""
    from aws_cdk import App

    from infra.app import build_app
    from infra.constructs.functions import SYNTH_WITHOUT_LAYER

    outdir = tmp_path_factory.mktemp("cdk.out")
    # Offline: no package step has run in CI, so the layer is allowed to be missing here.
    app, stack = build_app(App(outdir=str(outdir), context={SYNTH_WITHOUT_LAYER: "true"}))
    error = None
    try:
        app.synth()
    except RuntimeError as exc:  # cdk-nag findings fail synthesis; the report says which
        error = str(exc)
    name = stack.stack_name
    return Synthesized(
        outdir=outdir,
        stack_name=name,
        template=json.loads((outdir / f"{name}.template.json").read_text()),
        report=json.loads((outdir / "validation-report.json").read_text())
        if (outdir / "validation-report.json").exists() else {},
        metadata=json.loads((outdir / f"{name}.metadata.json").read_text()),
        validation_error=error,
    )
