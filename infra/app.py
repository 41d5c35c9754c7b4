"""The engram-memory CDK app: ``python infra/app.py`` (what cdk.json runs) synthesizes one
TenantStack chosen with ``-c tenant=<id>`` or ``-c config=<path>``, checked by cdk-nag.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Run as a script, Python puts infra/ first on sys.path, where infra/constructs would shadow
# the `constructs` library: import from the repository root instead.
_REPO_ROOT = str(Path(__file__).resolve().parent.parent)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)
# The stack sets the variables engram_memory.env_names names (without an installed package).
_SHARED = str(Path(_REPO_ROOT) / "shared")
if _SHARED not in sys.path:
    sys.path.append(_SHARED)

from aws_cdk import App, Environment, Validations  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.constructs.functions import MissingLayerError  # noqa: E402
from infra.stacks.tenant_stack import TenantStack  # noqa: E402
from infra.tenant_config import ConfigError, TenantConfig, load_config  # noqa: E402


def stack_name(config: TenantConfig) -> str:
    """The CloudFormation stack name of a tenant."""
    return f"EngramMemory-{config.tenant_id}"


def build_app(app: App | None = None) -> tuple[App, TenantStack]:
    """The app with its tenant stack and the cdk-nag AwsSolutions checks registered."""
    # The CDK CLI passes CDK_OUTDIR; a plain `python infra/app.py` writes ./cdk.out.
    app = app or App(outdir=None if os.environ.get("CDK_OUTDIR") else "cdk.out")
    config = load_config(tenant=app.node.try_get_context("tenant"),
                         config_path=app.node.try_get_context("config"))
    env = None
    if config.account or config.region:
        env = Environment(account=config.account, region=config.region)
    stack = TenantStack(app, stack_name(config), config=config, env=env,
                        description=f"engram-memory tenant {config.tenant_id}")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


def main() -> int:
    """Synthesize the cloud assembly (fails on any unacknowledged cdk-nag finding)."""
    try:
        app, _ = build_app()
    except (ConfigError, MissingLayerError) as exc:
        print(f"engram-memory: {exc}", file=sys.stderr)
        return 1
    app.synth()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
