"""``engram-memory token``: print a host-signed token for the local service."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engram_memory_host import (
    DEFAULT_TTL_S,
    TOOLS,
    ClaimRuleError,
    mint_agent_token,
    mint_maintainer_token,
)

from engram_memory.cli._common import csv
from engram_memory.local import state


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``token``."""
    token = sub.add_parser("token", help="print a host-signed token for the local service")
    token.add_argument("--data-dir", type=Path, help="the serve --data-dir, if any")
    token.add_argument("--tenant", help="default: the local service's tenant")
    token.add_argument("--workspace", default="default")
    token.add_argument("--purpose", default="purpose:local", help="the bound purpose_ref")
    token.add_argument("--capabilities", default=",".join(TOOLS),
                       help="granted tools (csv of short names); empty disables memory")
    token.add_argument("--principal", default="local-user")
    token.add_argument("--agent-id", default="local-agent")
    token.add_argument("--session", help="default: a fresh session id")
    token.add_argument("--confirm-required", default="", help="tools needing confirmation")
    token.add_argument("--confirmation-ref", help="the confirmation (elicitation) reference")
    token.add_argument("--ttl", type=int, default=DEFAULT_TTL_S, help="seconds (at most 300)")
    token.add_argument("--maintainer", action="store_true",
                       help="a host-operator token (perm read+maintain) for /host routes")
    token.add_argument("--subject", default="local-operator", help="maintainer subject")
    token.add_argument("--workspaces", nargs="+", metavar="WORKSPACE",
                       help="with --maintainer: the workspaces it covers (default tenant-wide)")
    token.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print one token on stdout (nothing else, so ``$(engram-memory token ...)`` works);
    a token the service would refuse is not minted: the claim rule is named on stderr."""
    home = state.home_dir(args.data_dir)
    key = state.host_key(home)
    identity = state.load_identity(home, None)
    tenant = args.tenant or identity.tenant
    try:
        if args.maintainer:
            token = mint_maintainer_token(key, issuer=identity.issuer,
                                          audience=identity.audience, tenant=tenant,
                                          subject=args.subject, ttl_s=args.ttl,
                                          workspaces=args.workspaces,
                                          tenant_wide=args.workspaces is None)
        else:
            token = mint_agent_token(
                key, issuer=identity.issuer, audience=identity.audience, tenant=tenant,
                workspace=args.workspace, purpose_ref=args.purpose,
                capabilities=csv(args.capabilities), principal=args.principal,
                agent_id=args.agent_id, session=args.session,
                confirm_required=csv(args.confirm_required),
                confirmation_ref=args.confirmation_ref, ttl_s=args.ttl,
            )
    except ClaimRuleError as refused:
        print(f"engram-memory token: refused by claim rule {refused}", file=sys.stderr)
        return 2
    print(token)
    return 0
