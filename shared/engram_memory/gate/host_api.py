"""The host-only routes on an API Gateway HTTP API (payload v2) event.

``POST /host/confirmations`` → the new confirmation (``elicitationRef``, ``state``, …);
``POST /host/confirmations/{ref}/decision`` → the settled state;
``GET  /host/confirmations/{ref}?workspace_id=…`` → the state;
``POST /host/adjudications/{candidate_id}`` → the admission outcome;
``GET  /host/confirmations?workspace_id=…&state=pending`` → a page of pending confirmations;
``GET  /host/adjudications?workspace_id=…`` → a page of candidates held for adjudication;
``GET  /host/adjudications/{candidate_id}?workspace_id=…`` → its payload, for the reviewer;
``GET  /host/whoami`` → what the presented token covers (tenant, subject, ``tenantWide``
or the sorted ``workspaces``), for a review page to show and keep to;
``GET /host/export``, ``POST /host/restore[/lines|/commit]``, ``DELETE /host/restore`` →
backup and restore (gate/backup_routes.py, docs/backup.md);
``POST /host/migrations/mem0`` → what became of each memory of a batch (gate/migration.py).

Every route needs a host-operator token carrying ``maintain`` (``Authorization: Bearer``);
an agent token is refused with 403, anything else with 401, checked before the path is
matched (an unknown path is 404 only to a maintainer). A query naming a parameter twice is
the constant 400. A token scoped to
``workspaces`` is refused with the same 403 on any other workspace (``HostApi.scope``,
the one check every route calls); only a ``tenant_wide`` token covers them all. Bodies
are closed models; any violation is one constant 400. Errors never carry exception text.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ValidationError

from engram_memory.contract.invocation import INSPECT
from engram_memory.contract.validation import canonical_arguments, validate_arguments
from engram_memory.domain.canonical import is_digest
from engram_memory.domain.confirmation import Decision
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import EngramError, InvalidSchema, StoreUnavailable, Unauthorized
from engram_memory.domain.intent import operation_digest, target_of
from engram_memory.gate import backup_routes
from engram_memory.gate.host_models import (
    AdjudicationBody,
    AdjudicationPage,
    CandidateContent,
    ConfirmationPage,
    ConfirmationRequestBody,
    DecisionBody,
    ListQuery,
    MaintainerScopeView,
    WaitingCandidateView,
    WaitingConfirmationView,
)
from engram_memory.gate.migration import Mem0Batch
from engram_memory.host_token import (
    HostTokenVerifier,
    MaintainerIdentity,
    UntrustedContext,
    bearer_token,
    verify_agent_token,
    verify_maintainer_token,
)
from engram_memory.metrics_namespace import METRICS_NAMESPACE
from engram_memory.services.confirmation import ConfirmationService
from engram_memory.services.waiting import (
    WaitingCandidate,
    WaitingConfirmation,
    WaitingList,
    WaitingPage,
)

logger = logging.getLogger(__name__)
# The gate's outcomes as the host sees them (the operator dashboard plots them); flushed by
# the host_api handler's ``log_metrics``. Counts only: never a reference or a value.
SERVICE_NAME = "engram-host-api"
metrics = Metrics(service=SERVICE_NAME, namespace=METRICS_NAMESPACE)

T = TypeVar("T")
Adjudicate = Callable[[Scope, str, str, str, str], Mapping[str, Any]]
"""``(scope, candidate_id, decision, approver, maintainer token) -> outcome`` (admission)."""
Migrate = Callable[[Scope, Mem0Batch, str], Mapping[str, Any]]
"""``(scope, batch, operator) -> batch result`` (gate/migration.Mem0Migrator)."""

_STATUS_BY_CODE = {
    "INVALID_SCHEMA": 400, "INVALID_DIGEST": 400, "UNAUTHORIZED": 403, "NOT_FOUND": 404,
    "ILLEGAL_TRANSITION": 409, "ALREADY_TERMINAL": 409, "DIGEST_CONFLICT": 409,
    "gate_failed": 409, "RATE_LIMITED": 429, "BACKUP_INVALID": 422, "RESTORE_REFUSED": 409,
}
_BAD_REQUEST = {"code": "INVALID_REQUEST", "message": "The request body is invalid."}
_UNAUTHENTICATED = {"code": "UNAUTHENTICATED",
                    "message": "A valid host maintainer token is required."}
_FORBIDDEN = {"code": "FORBIDDEN", "message": "The maintain permission is required."}
_NO_ROUTE = {"code": "NOT_FOUND", "message": "No such route."}
TOO_LARGE = {"code": "PAYLOAD_TOO_LARGE", "message": "The request body is too large."}
MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest host request body, after authentication (the MCP SDK's cap on ``/mcp``, so one
cap holds on every route; below API Gateway's 10 MB and Lambda's 6 MB; docs/confirmation.md)."""
_INTERNAL = {"code": "INTERNAL", "message": "The request could not be processed."}


class _Refusal(Exception):
    """An HTTP-level refusal with a constant body."""

    def __init__(self, status: int, error: dict[str, str]) -> None:
        super().__init__(error["code"])
        self.status = status
        self.error = error


def _response(status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "application/json"},
            "body": json.dumps(body, sort_keys=True)}


def _error_response(exc: EngramError) -> dict[str, Any]:
    status = _STATUS_BY_CODE.get(exc.code, 503 if exc.retriable else 500)
    return _response(status, {"error": {"code": exc.code, "message": exc.message,
                                        "retriable": exc.retriable}})


@dataclass(frozen=True, slots=True)
class _Request:
    method: str
    path: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    raw_body: str
    base64_body: bool

    @property
    def body(self) -> bytes:
        """The body bytes; read only by a route, i.e. after authentication."""
        try:
            body = (base64.b64decode(self.raw_body, validate=True) if self.base64_body
                    else self.raw_body.encode("utf-8"))
        except (ValueError, UnicodeEncodeError):
            raise _Refusal(400, _BAD_REQUEST) from None
        if len(body) > MAX_BODY_BYTES:
            raise _Refusal(413, TOO_LARGE)
        return body


def _parse_event(event: Mapping[str, Any]) -> _Request:
    http = event.get("requestContext", {}).get("http", {})
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    return _Request(method=str(http.get("method", "")).upper(),
                    path=str(event.get("rawPath") or http.get("path", "")),
                    headers=headers, query=dict(event.get("queryStringParameters") or {}),
                    raw_body=str(event.get("body") or ""),
                    base64_body=bool(event.get("isBase64Encoded")))


def _repeats_a_parameter(raw_query: str) -> bool:
    """Whether a query names one parameter twice (``?workspace_id=a&workspace_id=b``).

    API Gateway joins the values with a comma in ``queryStringParameters`` (and a local
    parser would keep one of them): only the raw query string tells, so it is read here.
    """
    names = [name for name, _ in parse_qsl(raw_query, keep_blank_values=True)]
    return len(names) != len(set(names))


def _body(model: type[BaseModel], request: _Request) -> Any:
    try:
        return model.model_validate_json(request.body or b"null")
    except ValidationError:
        raise _Refusal(400, _BAD_REQUEST) from None


Handler = Callable[["HostApi", _Request, MaintainerIdentity, str], dict[str, Any]]


class HostApi:
    """Routes host requests to the confirmation service and the admission adjudicator."""

    def __init__(
        self,
        verifier: HostTokenVerifier,
        confirmations: ConfirmationService,
        adjudicate: Adjudicate,
        waiting: WaitingList,
        backup: backup_routes.BackupRoutes | None = None,
        migrate: Migrate | None = None,
    ) -> None:
        self._verifier = verifier
        self._confirmations = confirmations
        self._adjudicate = adjudicate
        self._waiting = waiting
        self._backup = backup
        self._migrate = migrate

    def handle(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one HTTP API v2 event with a v2 response dict."""
        try:
            request = _parse_event(event)
            # Authenticate first: an anonymous caller cannot tell a real route from another.
            identity = self._authenticate(request.headers.get("authorization"))
            route, param = _match(request.method, request.path)
            if _repeats_a_parameter(str(event.get("rawQueryString") or "")):
                raise _Refusal(400, _BAD_REQUEST)
            return route(self, request, identity, param)
        except _Refusal as refusal:
            return _response(refusal.status, {"error": refusal.error})
        except EngramError as exc:
            return _error_response(exc)
        except Exception as exc:
            # Never echo or log the exception text (it may quote input): its class only.
            logger.error("host route failed", extra={"error_class": type(exc).__name__})
            return _response(500, {"error": _INTERNAL})

    def _authenticate(self, authorization: str | None) -> MaintainerIdentity:
        try:
            token = bearer_token(authorization)
        except UntrustedContext:
            raise _Refusal(401, _UNAUTHENTICATED) from None
        try:
            return verify_maintainer_token(token, self._verifier)
        except UntrustedContext:
            pass
        try:
            verify_agent_token(token, self._verifier)
        except UntrustedContext:
            raise _Refusal(401, _UNAUTHENTICATED) from None
        # A genuine agent token: authenticated, but the agent path never maintains.
        raise _Refusal(403, _FORBIDDEN)

    def scope(self, who: MaintainerIdentity, workspace_id: str) -> Scope:
        """The scope a route acts on: 403 (constant body) when ``who`` does not cover
        ``workspace_id``; the deployment's own workspace list as before."""
        if not who.covers(workspace_id):
            raise _Refusal(403, _FORBIDDEN)
        allowed = self._verifier.workspace_ids
        if allowed and workspace_id not in allowed:
            raise Unauthorized()
        return Scope(self._verifier.tenant_id, workspace_id)

    def _request(self, request: _Request, who: MaintainerIdentity, _: str) -> dict[str, Any]:
        body: ConfirmationRequestBody = _body(ConfirmationRequestBody, request)
        scope = self.scope(who, body.workspace_id)
        tool = Tool(body.capability)
        target, digest = _operation(tool, body)
        created = self._confirmations.request(
            scope, tool, target, digest, body.principal, who.subject, body.ttl_seconds,
            reason=_reason(body),
        )
        metrics.add_metric(name="confirmation.requested", unit=MetricUnit.Count, value=1)
        return _response(201, created.public_view())

    def _decide(self, request: _Request, who: MaintainerIdentity, ref: str) -> dict[str, Any]:
        body: DecisionBody = _body(DecisionBody, request)
        scope = self.scope(who, body.workspace_id)
        settled = self._confirmations.decide(
            scope, ref, Decision(body.decision), body.approver, who.subject,
        )
        metrics.add_metric(name=f"confirmation.{body.decision}", unit=MetricUnit.Count, value=1)
        return _response(200, settled.public_view())

    def _show(self, request: _Request, who: MaintainerIdentity, ref: str) -> dict[str, Any]:
        workspace_id = request.query.get("workspace_id", "")
        if not workspace_id or "#" in workspace_id:
            raise _Refusal(400, _BAD_REQUEST)
        found = self._confirmations.show(self.scope(who, workspace_id), ref)
        return _response(200, found.public_view())

    def _pending_confirmations(self, request: _Request, who: MaintainerIdentity,
                               __: str) -> dict[str, Any]:
        return self._listed(request, who, self._waiting.confirmations, _confirmation_view,
                            ConfirmationPage, state_required=True)

    def _held_candidates(self, request: _Request, who: MaintainerIdentity,
                         __: str) -> dict[str, Any]:
        return self._listed(request, who, self._waiting.adjudications, _candidate_view,
                            AdjudicationPage, state_required=False)

    def _listed(self, request: _Request, who: MaintainerIdentity,
                read: Callable[[Scope, int, str | None], WaitingPage[T]],
                view: Callable[[T], BaseModel], page: type[ConfirmationPage | AdjudicationPage],
                *, state_required: bool) -> dict[str, Any]:
        """One page of a waiting list, read with ``read`` and shown item by item by ``view``."""
        query = _list_query(request, state_required=state_required)
        try:
            found = read(self.scope(who, query.workspace_id), query.limit, query.cursor)
        except InvalidSchema:
            raise _Refusal(400, _BAD_REQUEST) from None
        listed = page.model_validate({"items": [view(item) for item in found.items],
                                      "nextCursor": found.next_cursor})
        return _response(200, listed.model_dump(exclude_none=True))

    def _held_candidate(self, request: _Request, who: MaintainerIdentity,
                        candidate_id: str) -> dict[str, Any]:
        workspace_id = request.query.get("workspace_id", "")
        if set(request.query) != {"workspace_id"} or not workspace_id or "#" in workspace_id:
            raise _Refusal(400, _BAD_REQUEST)
        scope = self.scope(who, workspace_id)
        # Only request_admission may decrypt: it reads the payload for this reviewer.
        token = bearer_token(request.headers.get("authorization"))
        found = self._adjudicate(scope, candidate_id, INSPECT, who.subject, token)
        payload = found.get("payload")
        if found.get("candidate_id") != candidate_id or not isinstance(payload, dict):
            raise StoreUnavailable()
        shown = CandidateContent(candidateId=candidate_id, payload=payload)
        return _response(200, shown.model_dump())

    def _adjudication(
        self, request: _Request, who: MaintainerIdentity, candidate_id: str,
    ) -> dict[str, Any]:
        body: AdjudicationBody = _body(AdjudicationBody, request)
        scope = self.scope(who, body.workspace_id)
        # The verified bearer token travels on: request_admission verifies it again.
        token = bearer_token(request.headers.get("authorization"))
        outcome = self._adjudicate(scope, candidate_id, body.decision,
                                   body.approver or who.subject, token)
        return _response(200, dict(outcome))

    def _whoami(self, request: _Request, who: MaintainerIdentity, _: str) -> dict[str, Any]:
        """The token's own scope: no query, nothing read from storage."""
        if request.query:
            raise _Refusal(400, _BAD_REQUEST)
        shown = MaintainerScopeView(
            tenantId=who.tenant_id, subject=who.subject, tenantWide=who.workspaces is None,
            workspaces=None if who.workspaces is None else sorted(who.workspaces))
        return _response(200, shown.model_dump(exclude_none=True))

    # --- backup and restore (gate/backup_routes.py) -------------------------------------

    def _backup_scope(self, who: MaintainerIdentity, workspace_id: str) -> Scope:
        if self._backup is None:
            raise _Refusal(404, _NO_ROUTE)
        if not workspace_id or "#" in workspace_id:
            raise _Refusal(400, _BAD_REQUEST)
        return self.scope(who, workspace_id)

    def _export(self, request: _Request, who: MaintainerIdentity, _: str) -> dict[str, Any]:
        scope = self._backup_scope(who, request.query.get("workspace_id", ""))
        assert self._backup is not None
        return _response(200, self._backup.export(scope, request.query))

    def _restore_body(self, request: _Request, who: MaintainerIdentity,
                      model: type[BaseModel]) -> tuple[Scope, Any]:
        if self._backup is None:
            raise _Refusal(404, _NO_ROUTE)
        body = backup_routes.parse_body(model, request.body)
        return self._backup_scope(who, body.workspace_id), body

    def _restore_begin(self, request: _Request, who: MaintainerIdentity,
                       _: str) -> dict[str, Any]:
        scope, body = self._restore_body(request, who, backup_routes.RestoreBegin)
        assert self._backup is not None
        return _response(200, self._backup.begin(scope, body))

    def _restore_lines(self, request: _Request, who: MaintainerIdentity,
                       _: str) -> dict[str, Any]:
        scope, body = self._restore_body(request, who, backup_routes.RestoreLines)
        assert self._backup is not None
        return _response(200, self._backup.lines(scope, body))

    def _restore_commit(self, request: _Request, who: MaintainerIdentity,
                        _: str) -> dict[str, Any]:
        scope, body = self._restore_body(request, who, backup_routes.RestoreCommit)
        assert self._backup is not None
        return _response(200, self._backup.commit(scope, body, who.subject))

    def _restore_abort(self, request: _Request, who: MaintainerIdentity,
                       _: str) -> dict[str, Any]:
        if set(request.query) != {"workspace_id"}:
            raise _Refusal(400, _BAD_REQUEST)
        scope = self._backup_scope(who, request.query["workspace_id"])
        assert self._backup is not None
        return _response(200, self._backup.abort(scope))

    # --- migration (gate/migration.py) ---------------------------------------------------

    def _migrate_mem0(self, request: _Request, who: MaintainerIdentity, _: str) -> dict[str, Any]:
        if self._migrate is None:
            raise _Refusal(404, _NO_ROUTE)
        body: Mem0Batch = _body(Mem0Batch, request)
        return _response(200, dict(self._migrate(self.scope(who, body.workspace_id), body,
                                                 who.subject)))


def _reason(body: ConfirmationRequestBody) -> str:
    """The agent's reason reference, when the host named the call by its arguments."""
    reason = (body.arguments or {}).get("reason_ref")
    return reason if isinstance(reason, str) else ""


_LIST_PARAMETERS = frozenset({"workspace_id", "state", "limit", "cursor"})


def _list_query(request: _Request, *, state_required: bool) -> ListQuery:
    """The closed query of a listing route; any violation is the constant 400."""
    query = dict(request.query)
    allowed = _LIST_PARAMETERS if state_required else _LIST_PARAMETERS - {"state"}
    if not set(query) <= allowed or (state_required and query.get("state") != "pending"):
        raise _Refusal(400, _BAD_REQUEST)
    values: dict[str, Any] = dict(query)
    if "limit" in values:
        limit = values["limit"]
        if not (limit.isascii() and limit.isdigit() and len(limit) <= 3):
            raise _Refusal(400, _BAD_REQUEST)
        values["limit"] = int(limit)
    try:
        return ListQuery.model_validate(values)
    except ValidationError:
        raise _Refusal(400, _BAD_REQUEST) from None


def _confirmation_view(found: WaitingConfirmation) -> WaitingConfirmationView:
    return WaitingConfirmationView(
        elicitationRef=found.elicitation_ref, state=found.state,  # type: ignore[arg-type]
        capability=found.tool, target=found.target,  # type: ignore[arg-type]
        reason=found.reason, principal=found.principal, requestedBy=found.requested_by,
        createdAtMs=found.created_at_ms, expiresAtMs=found.expires_at_ms,
    )


def _candidate_view(found: WaitingCandidate) -> WaitingCandidateView:
    return WaitingCandidateView(
        candidateId=found.candidate_id, principal=found.principal,
        capturedAtMs=found.captured_at_ms, heldAtMs=found.held_at_ms,
        policyId=found.policy_id, policyVersion=found.policy_version,
        payloadDigest=found.payload_digest,
    )


def _operation(tool: Tool, body: ConfirmationRequestBody) -> tuple[str, str]:
    """Target and operation digest, computed exactly as the gated tool computes them."""
    if body.arguments is not None:
        canonical = canonical_arguments(validate_arguments(tool, body.arguments))
        target = target_of(tool, canonical)
        if body.target is not None and body.target != target:
            raise InvalidSchema()
        return target, operation_digest(tool, canonical)
    if body.operation_digest is None or body.target is None or not is_digest(body.operation_digest):
        raise InvalidSchema()
    return body.target, body.operation_digest


_SEGMENT = r"([A-Za-z0-9_-]{1,128})"
_ROUTES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    ("POST", re.compile(r"^/host/confirmations/?$"), HostApi._request),
    ("GET", re.compile(r"^/host/confirmations/?$"), HostApi._pending_confirmations),
    ("GET", re.compile(r"^/host/adjudications/?$"), HostApi._held_candidates),
    ("POST", re.compile(rf"^/host/confirmations/{_SEGMENT}/decision/?$"), HostApi._decide),
    ("GET", re.compile(rf"^/host/confirmations/{_SEGMENT}/?$"), HostApi._show),
    ("POST", re.compile(rf"^/host/adjudications/{_SEGMENT}/?$"), HostApi._adjudication),
    ("GET", re.compile(rf"^/host/adjudications/{_SEGMENT}/?$"), HostApi._held_candidate),
    ("GET", re.compile(r"^/host/whoami/?$"), HostApi._whoami),
    ("GET", re.compile(r"^/host/export/?$"), HostApi._export),
    ("POST", re.compile(r"^/host/restore/?$"), HostApi._restore_begin),
    ("POST", re.compile(r"^/host/restore/lines/?$"), HostApi._restore_lines),
    ("POST", re.compile(r"^/host/restore/commit/?$"), HostApi._restore_commit),
    ("DELETE", re.compile(r"^/host/restore/?$"), HostApi._restore_abort),
    ("POST", re.compile(r"^/host/migrations/mem0/?$"), HostApi._migrate_mem0),
)


def _match(method: str, path: str) -> tuple[Handler, str]:
    for route_method, pattern, handler in _ROUTES:
        found = pattern.fullmatch(path)
        if found and route_method == method:
            return handler, found.group(1) if found.groups() else ""
    raise _Refusal(404, _NO_ROUTE)
