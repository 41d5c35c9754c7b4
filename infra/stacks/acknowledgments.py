"""cdk-nag acknowledgments: every one names the finding and says why it is acceptable.

cdk-nag 3 reads CDK's own ``Validations.of(construct).acknowledge(...)``; an acknowledgment
on a construct covers that construct's resources only, so each is placed as low as possible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Validations

if TYPE_CHECKING:
    from constructs import IConstruct

    from infra.stacks.tenant_stack import TenantStack

_PACK = "AwsSolutions::AwsSolutions-"


def _ack(construct: IConstruct, rule: str, reason: str) -> None:
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{_PACK}{rule}", reason=reason))


def acknowledge_findings(stack: TenantStack) -> None:
    """Acknowledge, resource by resource, the findings this design accepts."""
    _functions(stack)
    _storage(stack)
    _api(stack)
    _ack(stack.gate.state_machine.role, "IAM5[Resource::*]",
         "X-Ray PutTraceSegments/PutTelemetryRecords and the CloudWatch Logs delivery actions "
         "of Step Functions logging support no resource-level permissions; no data action "
         "of this role has a wildcard resource.")
    _ack(stack.page_cursor_secret, "SMG4",
         "Rotating the page-cursor HMAC key only invalidates open search cursors (STALE_PAGE); "
         "operators rotate it on demand (docs/deploy.md) instead of running a rotation Lambda.")
    _ack(stack.projector_dlq, "SQS3",
         "This queue is itself the on-failure destination of the projector's stream mapping.")


def _functions(stack: TenantStack) -> None:
    for name, role in stack.functions.roles.items():
        reason = ("X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level "
                  "permissions (active tracing); every data action is scoped to named "
                  "tables, keys, queues, functions or the state machine.")
        if name == "projector":
            reason += (" dynamodb:ListStreams supports no resource-level permission either; "
                       "it lists stream ARNs, never items.")
        if name == "host_api":
            reason += (" states:SendTaskSuccess/SendTaskFailure act on a task token, the "
                       "capability itself; whether IAM accepts the state machine ARN for them "
                       "is not documented, so they are granted in the form that cannot be "
                       "denied (docs/deploy.md).")
        _ack(role, "IAM5[Resource::*]", reason)
    for function in stack.functions.functions.values():
        _ack(function, "L1",
             "Pinned to Python 3.13 on purpose: the package step builds the dependency layer "
             "for exactly this version (infra/package.py); both are bumped together.")


def _storage(stack: TenantStack) -> None:
    _ack(stack.storage.keys, "DDB3",
         "The wrapped-key table must have no point-in-time recovery: deleting a wrapped key "
         "is the crypto-shred of a withdrawn or admitted candidate (docs/storage.md).")
    _ack(stack.storage.projection, "DDB3",
         "The search projection is derived data, rebuilt from the main table (which has PITR) "
         "by replaying it through the projector.")


def _api(stack: TenantStack) -> None:
    for route_id in ("McpRoute", "HostRoute", "HostRootRoute"):
        _ack(stack.api.node.find_child(route_id), "APIG4",
             "Authorized in the function: every request carries a host-signed JWT verified "
             "against the tenant's registered host key (issuer, audience, expiry, tenant).")
    for route_id in ("MetadataRoute", "MetadataForMcpRoute"):
        _ack(stack.api.node.find_child(route_id), "APIG4",
             "OAuth protected-resource metadata (RFC 9728) must be readable without "
             "credentials; it discloses no tenant data.")
    for route_id in ("McpOtherMethodsRoute",):
        _ack(stack.api.node.find_child(route_id), "APIG4",
             "The MCP endpoint answers every method but POST 405 (Allow: POST) before any "
             "authentication or data access: the endpoint is stateless (docs/mcp.md).")
