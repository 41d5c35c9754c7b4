"""``engram-memory serve``: start the local embedded service in the foreground."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from engram_memory.cli._common import csv

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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve``."""
    serve = sub.add_parser("serve", help="start the local embedded service")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (loopback by default)")
    serve.add_argument("--port", type=int, default=8787, help="0 picks a free port")
    serve.add_argument("--data-dir", type=Path, help="persist memory state across restarts")
    serve.add_argument("--tenant", help="tenant id of this deployment (default: local)")
    serve.add_argument("--workspaces", default="", help="allowed workspaces (csv; default any)")
    serve.add_argument("--log-level", default="warning")
    serve.add_argument("--handler-processes", type=_processes, default=2,
                       help="worker processes running the tool handlers, as Lambda runs each "
                            "invocation apart (0: in the service's process)")
    serve.set_defaults(func=run)


def _processes(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def run(args: argparse.Namespace) -> int:
    """Start the service in the foreground until Ctrl-C."""
    from engram_memory_host import DEFAULT_TTL_S, mint_maintainer_token

    from engram_memory import service_home
    from engram_memory.local.review_page import review_url
    from engram_memory.local.service import LocalConfig, serve_forever, start_service

    # This process's Python children (moto's, the handler workers) never import modules from
    # the working directory: a stray selectors.py there would run inside them.
    os.environ["PYTHONSAFEPATH"] = "1"
    config = LocalConfig(host=args.host, port=args.port, data_dir=args.data_dir,
                         tenant=args.tenant, workspaces=tuple(csv(args.workspaces)),
                         log_level=args.log_level, console=True,
                         handler_processes=args.handler_processes)
    service = start_service(config, background=False)
    maintainer = mint_maintainer_token(
        service_home.host_key(service.home), issuer=service.identity.issuer,
        audience=service.identity.audience, tenant=service.identity.tenant,
        subject="local-operator", tenant_wide=True)
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
