"""The tool-handler runner every tool Lambda uses: internal event in, envelope out.

``tool_handler(binding)`` is a tool Lambda's whole ``lambda_handler``: the one decorator
stack (``lambda_entry``) around ``run_tool``. A ``ToolBinding`` joins a tool's models
(``contract/registry``) to its service, typed: the service's ``execute`` receives exactly
that tool's argument model, so no service recovers its argument type.

``run_tool`` parses the internal event (``ToolInvocation``), checks that the event names
this Lambda's tool and that the host granted it, enforces the host deadline, validates
the arguments against the closed schema, calls the service and wraps its value in the
success envelope. Every failure becomes the failure envelope: an ``EngramError`` by its
class; anything else as the generic retriable error, logged by class name only (never
``str(exc)``: an exception text may quote memory content).

``run_adjudication`` is the same boundary for the host's adjudication event, which only
the request_admission Lambda accepts (docs/confirmation.md, "Adjudication"): it must carry
a maintainer token the function verifies again, since the IAM principal is not enough.

Both paths refuse a scope this deployment does not serve with the one check
``deployment_serves`` (UNAUTHORIZED); a tenant or workspace id with '#' is INVALID_SCHEMA.

Log lines carry ``tool``, ``audit_id`` and ``token_id`` only: never arguments or content.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ValidationError

from engram_memory import invocation_time
from engram_memory.adapters.clock import SystemClock
from engram_memory.contract.envelope import failure, failure_for_unexpected, success
from engram_memory.contract.invocation import (
    ADJUDICATION_KIND,
    INSPECT,
    AdjudicationInvocation,
    ToolInvocation,
)
from engram_memory.contract.registry import ToolModels
from engram_memory.contract.validation import validate_as
from engram_memory.domain.context import MUTATING_TOOLS, InvocationContext, Scope, Tool
from engram_memory.domain.errors import (
    DeadlineExceeded,
    EngramError,
    InvalidSchema,
    Unauthorized,
)
from engram_memory.metrics_namespace import (
    METRICS_NAMESPACE,
    capture_cold_starts,
    discarded_when_disabled,
)
from engram_memory.settings import Settings
from engram_memory.tracing import tracer_for

SERVICE_NAME = "engram-memory"

# Import-time objects are observability only (no clients); Powertools reads its env vars.
logger = Logger(service=SERVICE_NAME)
tracer = tracer_for(SERVICE_NAME)
metrics = Metrics(service=SERVICE_NAME, namespace=METRICS_NAMESPACE)

# botocore logs request and response bodies at DEBUG (arguments, KMS plaintext keys):
# whatever level an operator picks, those loggers stay at WARNING in a tool Lambda.
for _noisy in ("botocore", "boto3", "urllib3", "s3transfer"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

ArgsT = TypeVar("ArgsT", bound=BaseModel)
ArgsT_contra = TypeVar("ArgsT_contra", bound=BaseModel, contravariant=True)


class ToolService(Protocol[ArgsT_contra]):
    """A tool's use case: (verified context, validated arguments) → the tool's ``value``."""

    def execute(self, ctx: InvocationContext, args: ArgsT_contra, /) -> Mapping[str, Any]:
        """Run the use case; raise an ``EngramError`` for a contract failure."""
        ...


@dataclass(frozen=True, slots=True)
class ToolBinding(Generic[ArgsT]):
    """One row of the tool table: the tool's models and its (per-container) service."""

    models: ToolModels[ArgsT]
    service: Callable[[], ToolService[ArgsT]]

    @property
    def tool(self) -> Tool:
        """The tool this binding serves."""
        return self.models.tool


Adjudicator = Callable[[Scope, str, str, str], Mapping[str, Any]]
"""Host adjudication: (scope, candidate_id, "accept"|"reject", approver) → the value."""

ScopeCheck = Callable[[Scope], bool]
"""Whether this deployment serves a scope (its tenant, one of its workspaces)."""

MaintainerCheck = Callable[[str], str]
"""Verify a maintainer bearer token → its tenant; raise ``Unauthorized`` if it is not one."""

_LOG_KEYS = ("tool", "audit_id", "token_id")
_SYSTEM_CLOCK = SystemClock()
_UNKNOWN_AUDIT_ID = "unavailable"


def serves_scope(scope: Scope, settings: Settings) -> bool:
    """The scope is the deployment's tenant and, when configured, one of its workspaces."""
    allowed = settings.workspace_ids
    return scope.tenant_id == settings.tenant_id and (
        not allowed or scope.workspace_id in allowed)


def deployment_serves(scope: Scope) -> bool:
    """``serves_scope`` against the function's own environment (the stack's settings)."""
    # Read per call (the environment is the deployment's; tests change it between cases).
    return serves_scope(scope, Settings.from_env())


def _audit_id_of(event: object) -> str:
    """Best-effort audit id from a possibly malformed event (for its failure envelope)."""
    if isinstance(event, Mapping):
        context = event.get("context")
        if isinstance(context, Mapping):
            audit_id = context.get("audit_id")
            if isinstance(audit_id, str) and 0 < len(audit_id) <= 256:
                return audit_id
    return _UNKNOWN_AUDIT_ID


def _parse(event: object) -> tuple[ToolInvocation, InvocationContext]:
    """The invocation and its domain context; a malformed internal event is INVALID_SCHEMA."""
    try:
        invocation = ToolInvocation.model_validate(event)
        return invocation, invocation.context.to_context()
    except (ValidationError, ValueError, TypeError):
        raise InvalidSchema from None


def _authorize(tool: Tool, invocation: ToolInvocation, ctx: InvocationContext,
               now_ms: int) -> None:
    """The event must name this Lambda's tool, granted by the host, before the deadline."""
    if invocation.tool is not tool or tool not in ctx.capabilities:
        raise Unauthorized
    if ctx.deadline_ms < now_ms:
        raise DeadlineExceeded


def _execute(binding: ToolBinding[ArgsT], event: object, now_ms: Callable[[], int],
             serves: ScopeCheck) -> dict[str, Any]:
    tool = binding.tool
    invocation, ctx = _parse(event)
    logger.append_keys(tool=tool.value, audit_id=ctx.audit_id, token_id=ctx.token_id)
    _authorize(tool, invocation, ctx, now_ms())
    arguments = validate_as(binding.models.arguments, invocation.arguments)
    # After the pure checks (they need no configuration), before any service or store:
    # an event for a scope this deployment does not serve is refused, never looked up.
    if not serves(ctx.scope):
        raise Unauthorized
    # A lost commit retries only while the host's deadline leaves time to answer.
    with invocation_time.bound((ctx.deadline_ms - now_ms()) / 1000):
        value = binding.service().execute(ctx, arguments)
    return success(dict(value), ctx.audit_id)


def run_tool(
    binding: ToolBinding[ArgsT],
    event: object,
    *,
    now_ms: Callable[[], int] = _SYSTEM_CLOCK.now_ms,
    serves: ScopeCheck = deployment_serves,
) -> dict[str, Any]:
    """Run one tool invocation and return the envelope dict (never raises).

    The binding's service is built inside the error boundary, so a wiring failure
    (missing configuration, unreachable client) is still an envelope.
    """
    tool = binding.tool
    audit_id = _audit_id_of(event)
    try:
        envelope = _execute(binding, event, now_ms, serves)
        metrics.add_metric(name=f"{tool.value}.ok", unit=MetricUnit.Count, value=1)
        return envelope
    except EngramError as exc:
        logger.info("tool refused", extra={"error_code": exc.code})
        metrics.add_metric(name=f"error.{exc.code}", unit=MetricUnit.Count, value=1)
        return failure(exc, audit_id)
    except Exception as exc:  # the boundary: nothing escapes as raw text
        logger.error("tool failed unexpectedly", extra={"error_class": type(exc).__name__})
        metrics.add_metric(name="error.UNEXPECTED", unit=MetricUnit.Count, value=1)
        # A mutation may have sent its commit before failing: its outcome is unknown.
        return failure_for_unexpected(audit_id, mutation=tool in MUTATING_TOOLS)
    finally:
        logger.remove_keys(list(_LOG_KEYS))


def is_adjudication(event: object) -> bool:
    """True for an event that claims to be a host adjudication (``kind`` present).

    Such an event is then validated as an ``AdjudicationInvocation`` only; a
    ``ToolInvocation`` has no ``kind`` and can never be routed here.
    """
    return isinstance(event, Mapping) and "kind" in event


def _adjudicate(event: object, resolve: Callable[[], Adjudicator],
                serves: ScopeCheck, maintainer: MaintainerCheck) -> dict[str, Any]:
    try:
        invocation = AdjudicationInvocation.model_validate(event)
    except (ValidationError, ValueError, TypeError):
        raise InvalidSchema from None
    logger.append_keys(tool=ADJUDICATION_KIND, audit_id=invocation.audit_id)
    if not serves(invocation.scope) or invocation.maintainer_token is None:
        raise Unauthorized
    # The invoker's IAM identity may be the agent-facing endpoint: only a maintainer's
    # token of this very tenant makes the event a host decision.
    if maintainer(invocation.maintainer_token) != invocation.tenant_id:
        raise Unauthorized
    value = resolve()(invocation.scope, invocation.candidate_id, invocation.decision,
                      invocation.approver)
    return success(dict(value), invocation.audit_id)


def run_adjudication(event: object, resolve: Callable[[], Adjudicator],
                     serves: ScopeCheck, maintainer: MaintainerCheck) -> dict[str, Any]:
    """Run one host adjudication event and return the envelope dict (never raises)."""
    audit_id = _adjudication_audit_id(event)
    try:
        envelope = _adjudicate(event, resolve, serves, maintainer)
        # A reviewer reading a held candidate decided nothing: counted apart from decisions.
        if _is_inspection(event):
            metrics.add_metric(name="adjudication.inspect", unit=MetricUnit.Count, value=1)
        else:
            metrics.add_metric(name="adjudication.ok", unit=MetricUnit.Count, value=1)
        return envelope
    except EngramError as exc:
        logger.info("adjudication refused", extra={"error_code": exc.code})
        metrics.add_metric(name=f"error.{exc.code}", unit=MetricUnit.Count, value=1)
        return failure(exc, audit_id)
    except Exception as exc:  # the boundary: nothing escapes as raw text
        logger.error("adjudication failed unexpectedly",
                     extra={"error_class": type(exc).__name__})
        metrics.add_metric(name="error.UNEXPECTED", unit=MetricUnit.Count, value=1)
        # A decision commits (its outcome may be unknown); an inspection writes nothing.
        return failure_for_unexpected(audit_id, mutation=not _is_inspection(event))
    finally:
        logger.remove_keys(list(_LOG_KEYS))


def _is_inspection(event: object) -> bool:
    return isinstance(event, Mapping) and event.get("decision") == INSPECT


def _adjudication_audit_id(event: object) -> str:
    if isinstance(event, Mapping):
        audit_id = event.get("audit_id")
        if isinstance(audit_id, str) and 0 < len(audit_id) <= 256:
            return audit_id
    return _UNKNOWN_AUDIT_ID


LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def lambda_entry(handler: LambdaHandler) -> LambdaHandler:
    """The one decorator stack of the tool Lambdas (and request_admission's two events).

    ``clear_state``: local mode runs every handler on one shared logger, so no stale keys.
    Neither the response (memory content) nor an exception's text (it may quote content)
    ever goes into a trace.
    """
    handler = _within_lambda_time(handler)
    traced = tracer.capture_lambda_handler(capture_response=False, capture_error=False)
    entry: LambdaHandler = logger.inject_lambda_context(log_event=False, clear_state=True)(
        traced(discarded_when_disabled(metrics)(
            metrics.log_metrics(handler, capture_cold_start_metric=capture_cold_starts()))))
    return entry


def _within_lambda_time(handler: LambdaHandler) -> LambdaHandler:
    """Bind the Lambda's remaining time (``invocation_time``) around the handler."""

    def bounded(event: dict[str, Any], context: Any) -> dict[str, Any]:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            return handler(event, context)
        with invocation_time.bound(remaining() / 1000):
            return handler(event, context)

    return functools.wraps(handler)(bounded)


def tool_handler(binding: ToolBinding[ArgsT]) -> LambdaHandler:
    """A tool Lambda's ``lambda_handler``: its internal event in, the envelope out."""

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return run_tool(binding, event)

    lambda_handler.__doc__ = f"Run {binding.tool.mcp_name} for one internal ToolInvocation."
    return lambda_entry(lambda_handler)
