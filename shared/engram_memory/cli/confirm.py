"""``engram-memory confirm request|approve|reject|show``: play the host's human gate.

Each subcommand calls the running local service's ``/host/confirmations`` routes with a
freshly minted maintainer token (the local host key in the service's home), so a person
can run the whole withdraw / forget flow by hand. See docs/confirmation.md.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_WORKSPACE = "default"
_TIMEOUT_S = 30


def _read_arguments(value: str) -> dict[str, Any]:
    """Inline JSON, or ``@path`` to a JSON file."""
    text = Path(value[1:]).read_text(encoding="utf-8") if value.startswith("@") else value
    parsed = json.loads(text)
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError("--arguments must be a JSON object")
    return parsed


def _service(data_dir: Path | None) -> tuple[str, str]:
    """(base URL of the running service, maintainer token)."""
    from engram_memory_host import mint_maintainer_token

    from engram_memory import service_home

    home = service_home.home_dir(data_dir)
    identity = service_home.read_identity(home)
    if identity is None or not identity.endpoint:
        raise SystemExit("no local service found: start `engram-memory serve` first")
    base = identity.endpoint.rsplit("/mcp", 1)[0]
    token = mint_maintainer_token(service_home.host_key(home), issuer=identity.issuer,
                                  audience=identity.audience, tenant=identity.tenant,
                                  subject="local-cli", tenant_wide=True)
    return base, token


def _http(method: str, url: str, token: str, body: dict[str, Any] | None) -> int:
    data = json.dumps(body).encode("utf-8") if body is not None else None
    request = urllib.request.Request(  # noqa: S310 - the local service's own http URL
        url, data=data, method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:  # noqa: S310
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, payload = exc.code, exc.read()
    print(json.dumps(json.loads(payload or b"{}"), indent=2, sort_keys=True))
    return 0 if status < 400 else 1


def run_request(args: argparse.Namespace) -> int:
    """POST /host/confirmations."""
    base, token = _service(args.data_dir)
    body: dict[str, Any] = {"workspace_id": args.workspace, "capability": args.tool,
                            "principal": args.principal, "ttl_seconds": args.ttl}
    if args.arguments is not None:
        body["arguments"] = args.arguments
    else:
        body.update(target=args.target or "", operation_digest=args.digest)
    return _http("POST", f"{base}/host/confirmations", token, body)


def _decision(args: argparse.Namespace, decision: str) -> int:
    base, token = _service(args.data_dir)
    body = {"workspace_id": args.workspace, "decision": decision, "approver": args.approver}
    return _http("POST", f"{base}/host/confirmations/{args.ref}/decision", token, body)


def run_show(args: argparse.Namespace) -> int:
    """GET /host/confirmations/{ref}."""
    base, token = _service(args.data_dir)
    query = urllib.parse.urlencode({"workspace_id": args.workspace})
    return _http("GET", f"{base}/host/confirmations/{args.ref}?{query}", token, None)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, help="the serve --data-dir, if any")
    parser.add_argument("--workspace", default=DEFAULT_WORKSPACE)


def _approve(args: argparse.Namespace) -> int:
    """POST /host/confirmations/{ref}/decision (approve)."""
    return _decision(args, "approve")


def _reject(args: argparse.Namespace) -> int:
    """POST /host/confirmations/{ref}/decision (reject)."""
    return _decision(args, "reject")


_ACTIONS = {"request": run_request, "approve": _approve, "reject": _reject, "show": run_show}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``confirm`` and its four subcommands."""
    confirm = sub.add_parser("confirm", help="request / decide / show a confirmation")
    confirm.set_defaults(func=run)
    actions = confirm.add_subparsers(dest="confirm_command", required=True)
    request = actions.add_parser("request", help="ask for a human confirmation of one call")
    _common(request)
    request.add_argument("--tool", required=True,
                         choices=["withdraw", "forget", "capture", "request_admission"])
    request.add_argument("--principal", default="local-user", help="the agent principal")
    request.add_argument("--arguments", type=_read_arguments,
                         help="the exact tool arguments (JSON or @file) the agent will send")
    request.add_argument("--target", help="with --digest: the candidate/record id")
    request.add_argument("--digest", help="with --target: the operation digest")
    request.add_argument("--ttl", type=int, default=300, help="seconds to decide (≤ 300)")
    for name in ("approve", "reject"):
        parser = actions.add_parser(name, help=f"{name} a pending confirmation")
        _common(parser)
        parser.add_argument("ref", help="the elicitationRef")
        parser.add_argument("--approver", default="local-user", help="who decided")
    show = actions.add_parser("show", help="show a confirmation's state")
    _common(show)
    show.add_argument("ref", help="the elicitationRef")


def run(args: argparse.Namespace) -> int:
    """Run the chosen ``confirm`` subcommand."""
    return _ACTIONS[args.confirm_command](args)
