"""The tenant stack synthesized as ``python infra/app.py`` does, for a rehearsal tenant.

The rehearsal needs the host's private key (it mints tokens), so it writes a tenant file
from the example tenant with a freshly generated host key and synthesizes that
(``-c config=<path>``), offline (``engram:synthWithoutLayer``, as tests/infra does).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.support.host_tokens import generate_host_key, public_pem

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "infra" / "config" / "example-tenant.json"
TENANT = "rehearsal"
ISSUER = "https://host.rehearsal.example"


@dataclass(frozen=True)
class SynthesizedStack:
    """One synthesis: the template and the host key whose public half it carries."""

    stack_name: str
    template: dict[str, Any]
    host_key: ed25519.Ed25519PrivateKey
    issuer: str
    audience: str
    tenant: str
    workspaces: tuple[str, ...]


def tenant_file(directory: Path, key: ed25519.Ed25519PrivateKey) -> Path:
    """The example tenant, renamed, with this host key and its own issuer."""
    config = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    config.update(tenant_id=TENANT, alarm_email=None, account=None, region=None)
    config["host"] = {"issuer": ISSUER, "audience": f"urn:engram-memory:{TENANT}",
                      "public_key_pem": public_pem(key)}
    config = {k: v for k, v in config.items() if v is not None}
    path = directory / f"{TENANT}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def synthesize(directory: Path) -> SynthesizedStack:
    """Synthesize the rehearsal tenant's stack into ``directory`` (node, ~1 GB, seconds)."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    from aws_cdk import App

    from infra.app import build_app
    from infra.constructs.functions import SYNTH_WITHOUT_LAYER

    key = generate_host_key()
    config_path = tenant_file(directory, key)
    outdir = directory / "cdk.out"
    app, stack = build_app(App(outdir=str(outdir), context={
        SYNTH_WITHOUT_LAYER: "true", "config": str(config_path)}))
    app.synth()
    config = json.loads(config_path.read_text(encoding="utf-8"))
    name = stack.stack_name
    return SynthesizedStack(
        stack_name=name,
        template=json.loads((outdir / f"{name}.template.json").read_text(encoding="utf-8")),
        host_key=key, issuer=ISSUER, audience=config["host"]["audience"], tenant=TENANT,
        workspaces=tuple(config["workspace_ids"]))
