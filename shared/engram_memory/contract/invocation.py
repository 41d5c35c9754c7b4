"""The typed internal event the MCP endpoint sends to a tool Lambda.

Same shape whether it travels through ``lambda:Invoke`` (AWS) or a direct in-process call
(local mode and tests): the verified host context plus the raw, not yet validated,
arguments. The tool Lambda validates the arguments itself (closed schema) and answers
with the envelope dict.

``AdjudicationInvocation`` is the one other event: the host API (never the MCP endpoint)
asks the request_admission Lambda, the only function allowed to decrypt a candidate, to
settle a ``pending_adjudication`` candidate. It shares no field name with a
``ToolInvocation`` and both models are closed, so neither can be read as the other. It
carries the maintainer's bearer token, which the function verifies again: the IAM
principal allowed to invoke request_admission includes the internet-facing MCP endpoint,
so the invoker alone proves nothing about who asked.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from engram_memory.contract.types import CandidateId, OpaqueRef
from engram_memory.domain.context import InvocationContext, Scope, Tool

# Same bound as the host-context verifier (engram_memory.host_token.MAX_TOKEN_BYTES).
MAX_TOKEN_BYTES = 16_384


ADJUDICATION_KIND = "adjudication"
INSPECT = "inspect"
"""The adjudication ``decision`` that only reads: the candidate's payload for the reviewer."""


def _no_key_separator(value: str) -> str:
    # Scope ids become storage-key parts joined by '#': never let one carry a separator.
    if "#" in value:
        raise ValueError("not a scope id")
    return value


ScopeId = Annotated[OpaqueRef, AfterValidator(_no_key_separator)]


class ContextModel(BaseModel):
    """Wire form of :class:`InvocationContext` (already verified by the endpoint)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    # Same '#'-free ids as an adjudication: a tool event never names a composite key part.
    tenant_id: Annotated[str, AfterValidator(_no_key_separator)]
    workspace_id: Annotated[str, AfterValidator(_no_key_separator)]
    principal: str
    agent_id: str
    session_id: str
    purpose_ref: str
    audit_id: str
    deadline_ms: int
    capabilities: list[str]
    confirmation_required: list[str] = Field(default_factory=list)
    confirmation_ref: str | None = None
    token_id: str = ""

    @classmethod
    def from_context(cls, ctx: InvocationContext) -> ContextModel:
        """The wire form of a verified context."""
        return cls(
            tenant_id=ctx.scope.tenant_id,
            workspace_id=ctx.scope.workspace_id,
            principal=ctx.principal,
            agent_id=ctx.agent_id,
            session_id=ctx.session_id,
            purpose_ref=ctx.purpose_ref,
            audit_id=ctx.audit_id,
            deadline_ms=ctx.deadline_ms,
            capabilities=sorted(t.value for t in ctx.capabilities),
            confirmation_required=sorted(t.value for t in ctx.confirmation_required),
            confirmation_ref=ctx.confirmation_ref,
            token_id=ctx.token_id,
        )

    def to_context(self) -> InvocationContext:
        """The domain context."""
        return InvocationContext(
            scope=Scope(self.tenant_id, self.workspace_id),
            principal=self.principal,
            agent_id=self.agent_id,
            session_id=self.session_id,
            purpose_ref=self.purpose_ref,
            audit_id=self.audit_id,
            deadline_ms=self.deadline_ms,
            capabilities=frozenset(Tool(c) for c in self.capabilities),
            confirmation_required=frozenset(Tool(c) for c in self.confirmation_required),
            confirmation_ref=self.confirmation_ref,
            token_id=self.token_id,
        )


class ToolInvocation(BaseModel):
    """``{tool, context, arguments}``: the event every tool Lambda receives."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    tool: Tool
    context: ContextModel
    arguments: dict[str, Any]


class AdjudicationInvocation(BaseModel):
    """``{kind: "adjudication", …}``: the host's decision on a held candidate."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    kind: Literal["adjudication"]
    tenant_id: ScopeId
    workspace_id: ScopeId
    candidate_id: CandidateId
    # "inspect": the reviewer reads the held candidate's payload (nothing is decided).
    decision: Literal["accept", "reject", "inspect"]
    approver: OpaqueRef
    audit_id: str = Field(min_length=1, max_length=256)
    # The host API's verified maintainer JWT, re-verified by the function. Optional in the
    # model so that a missing token is UNAUTHORIZED (not INVALID_SCHEMA); never in a repr.
    maintainer_token: str | None = Field(default=None, min_length=1,
                                         max_length=MAX_TOKEN_BYTES, repr=False)

    @property
    def scope(self) -> Scope:
        """The exact scope the host bound the decision to."""
        return Scope(self.tenant_id, self.workspace_id)
