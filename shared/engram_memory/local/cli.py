"""``engram-memory``: the local service's command line (serve, token, confirm, reindex),
and ``smoke`` against a deployed stack."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from engram_memory.local import state
from engram_memory.local.tokens import (
    ALL_CAPABILITIES,
    DEFAULT_TTL_S,
    load_or_create_host_key,
    mint_agent_token,
    mint_maintainer_token,
)

BANNER = """\
engram-memory local service
  MCP endpoint     {mcp}   (both protocol eras, stateless JSON)
  review page      {review}   (what waits for a human)
  host routes      {base}/host/...
  metadata         {base}/.well-known/oauth-protected-resource
  tenant           {tenant}
  home             {home}{persist}

Agent token (valid {ttl} s), in another terminal:
  engram-memory token{data_dir} --workspace default --purpose purpose:demo \\
      --capabilities search,get,capture,request_admission
and send it as "Authorization: Bearer <token>" to {mcp}.

Maintainer token to paste in the review page (valid {ttl} s;
another: engram-memory token{data_dir} --maintainer):
  {maintainer}

withdraw / forget wait for a human: each confirmation waiting for a decision prints a line
here; approve or reject it on the review page, then give the agent a token carrying
--confirmation-ref <ref>. Press Ctrl-C to stop.
"""


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="start the local embedded service")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (loopback by default)")
    serve.add_argument("--port", type=int, default=8787, help="0 picks a free port")
    serve.add_argument("--data-dir", type=Path, help="persist memory state across restarts")
    serve.add_argument("--tenant", help="tenant id of this deployment (default: local)")
    serve.add_argument("--workspaces", default="", help="allowed workspaces (csv; default any)")
    serve.add_argument("--log-level", default="warning")


def _add_token(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    token = sub.add_parser("token", help="print a host-signed token for the local service")
    token.add_argument("--data-dir", type=Path, help="the serve --data-dir, if any")
    token.add_argument("--tenant", help="default: the local service's tenant")
    token.add_argument("--workspace", default="default")
    token.add_argument("--purpose", default="purpose:local", help="the bound purpose_ref")
    token.add_argument("--capabilities", default=",".join(ALL_CAPABILITIES),
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


def _add_reindex(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reindex = sub.add_parser(
        "reindex", help="rebuild the search projection of deployed tables (docs/search.md)")
    reindex.add_argument("--drop-stale", action="store_true",
                         help="then delete the projection items of other generations")
    reindex.set_defaults(func=run_reindex)


def run_reindex(args: argparse.Namespace) -> int:
    """Re-index every record of ENGRAM_TABLE_NAME into ENGRAM_PROJECTION_TABLE_NAME.

    Uses the ambient AWS credentials and the ``ENGRAM_*`` table settings; safe to run
    while the projector runs, and again after an interruption (services/reindex.py).
    """
    from engram_memory import bootstrap
    from engram_memory.adapters.dynamodb.projection_generations import delete_other_generations
    from engram_memory.composition import projection as projection_root
    from engram_memory.domain.ranking import PROJECTION_GENERATION

    scopes = projection_root.rebuild().run()
    print(f"generation {PROJECTION_GENERATION}: {len(scopes)} workspaces indexed up to their "
          "journal head")
    if args.drop_stale:
        dropped = delete_other_generations(bootstrap.dynamodb_client(),
                                           bootstrap.settings().projection_table_name)
        print(f"deleted {dropped} items of other generations")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="engram-memory", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_serve(sub)
    _add_token(sub)
    _add_reindex(sub)
    try:
        confirm_cli = importlib.import_module("engram_memory.local.confirm_cli")
    except ImportError:
        confirm_cli = None
    if confirm_cli is not None and hasattr(confirm_cli, "register"):
        confirm_cli.register(sub)
    from engram_memory import smoke  # against a deployed stack, not the local service

    smoke.register(sub)
    importlib.import_module("engram_memory.cli.import_").register(sub)
    return parser


def run_token(args: argparse.Namespace) -> int:
    """Print one token on stdout (nothing else, so ``$(engram-memory token ...)`` works)."""
    home = state.home_dir(args.data_dir)
    key = load_or_create_host_key(home / state.HOST_KEY_FILE)
    identity = state.load_identity(home, None)
    tenant = args.tenant or identity.tenant
    if args.maintainer:
        token = mint_maintainer_token(key, issuer=identity.issuer, audience=identity.audience,
                                      tenant=tenant, now=time.time(), subject=args.subject,
                                      ttl_s=args.ttl)
    else:
        token = mint_agent_token(
            key, issuer=identity.issuer, audience=identity.audience, tenant=tenant,
            workspace=args.workspace, purpose_ref=args.purpose,
            capabilities=_csv(args.capabilities), now=time.time(), principal=args.principal,
            agent_id=args.agent_id, session=args.session,
            confirm_required=_csv(args.confirm_required),
            confirmation_ref=args.confirmation_ref, ttl_s=args.ttl,
        )
    print(token)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """Start the service in the foreground until Ctrl-C."""
    from engram_memory.local.review_page import review_url
    from engram_memory.local.service import LocalConfig, serve_forever, start_service

    config = LocalConfig(host=args.host, port=args.port, data_dir=args.data_dir,
                         tenant=args.tenant, workspaces=tuple(_csv(args.workspaces)),
                         log_level=args.log_level, console=True)
    service = start_service(config, background=False)
    key = load_or_create_host_key(service.home / state.HOST_KEY_FILE)
    maintainer = mint_maintainer_token(
        key, issuer=service.identity.issuer, audience=service.identity.audience,
        tenant=service.identity.tenant, now=time.time())
    print(BANNER.format(
        mcp=service.mcp_url, base=service.base_url, review=review_url(service.base_url),
        maintainer=maintainer, tenant=service.identity.tenant,
        home=service.home, ttl=DEFAULT_TTL_S,
        persist=" (state persisted on stop)" if args.data_dir else " (state in memory only)",
        data_dir=f" --data-dir {args.data_dir}" if args.data_dir else "",
    ), flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        serve_forever(service)
    print("engram-memory stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``engram-memory`` script."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "token":
        return run_token(args)
    handler = getattr(args, "func", None) or getattr(args, "handler", None)
    if handler is None:
        build_parser().print_help()
        return 2
    return int(handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
