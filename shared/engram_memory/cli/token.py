"""``engram-memory token``: print a host-signed token for the local service."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engram_memory.cli._common import csv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``token``."""
    token = sub.add_parser("token", help="print a host-signed token for the local service")
    token.add_argument("--data-dir", type=Path, help="the serve --data-dir, if any")
    token.add_argument("--tenant", help="default: the local service's tenant")
    token.add_argument("--workspace", default="default")
    token.add_argument("--purpose", default="purpose:local", help="the bound purpose_ref")
    token.add_argument("--capabilities",
                       help="granted tools (csv of short names; default: every tool); "
                            "empty disables memory")
    token.add_argument("--principal", default="local-user")
    token.add_argument("--agent-id", default="local-agent")
    token.add_argument("--session", help="default: a fresh session id")
    token.add_argument("--confirm-required", default="", help="tools needing confirmation")
    token.add_argument("--confirmation-ref", help="the confirmation (elicitation) reference")
    token.add_argument("--ttl", type=int, help="seconds (default and at most 300)")
    token.add_argument("--maintainer", action="store_true",
                       help="a host-operator token (perm read+maintain) for /host routes")
    token.add_argument("--subject", default="local-operator", help="maintainer subject")
    token.add_argument("--workspaces", nargs="+", metavar="WORKSPACE",
                       help="with --maintainer: the workspaces it covers (default tenant-wide)")
    token.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print one token on stdout (nothing else, so ``$(engram-memory token ...)`` works);
    a token the service would refuse is not minted: the claim rule is named on stderr."""
    from engram_memory_host import (
        DEFAULT_TTL_S,
        TOOLS,
        ClaimRuleError,
        mint_agent_token,
        mint_maintainer_token,
    )

    from engram_memory import service_home

    ttl = DEFAULT_TTL_S if args.ttl is None else args.ttl
    capabilities = list(TOOLS) if args.capabilities is None else csv(args.capabilities)
    home = service_home.home_dir(args.data_dir)
    key = service_home.host_key(home)
    identity = service_home.load_identity(home, None)
    tenant = args.tenant or identity.tenant
    try:
        if args.maintainer:
            token = mint_maintainer_token(key, issuer=identity.issuer,
                                          audience=identity.audience, tenant=tenant,
                                          subject=args.subject, ttl_s=ttl,
                                          workspaces=args.workspaces,
                                          tenant_wide=args.workspaces is None)
        else:
            token = mint_agent_token(
                key, issuer=identity.issuer, audience=identity.audience, tenant=tenant,
                workspace=args.workspace, purpose_ref=args.purpose,
                capabilities=capabilities, principal=args.principal,
                agent_id=args.agent_id, session=args.session,
                confirm_required=csv(args.confirm_required),
                confirmation_ref=args.confirmation_ref, ttl_s=ttl,
            )
    except ClaimRuleError as refused:
        print(f"engram-memory token: refused by claim rule {refused}", file=sys.stderr)
        return 2
    print(token)
    return 0
