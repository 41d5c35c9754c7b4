"""Create the confirmation gate's resources on the local moto server.

The same shapes the CDK stack declares: the confirmation queue and the standard state
machine built from the one ASL file (``engram_memory/gate/confirmation_gate.asl.json``)
with ``${TableName}`` and ``${QueueUrl}`` substituted. Returns the environment updates
the local service applies before wiring the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory import env_names
from engram_memory.gate.definition import render_definition
from engram_memory.local.provisioning import stack_shapes

if TYPE_CHECKING:
    from engram_memory.settings import Settings

# moto's default account; moto does not check that the role exists or can be assumed.
LOCAL_ACCOUNT_ID = "123456789012"
ROLE_NAME = "engram-confirmation-gate"
_TRUST_POLICY = (
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
    '"Principal":{"Service":"states.amazonaws.com"},"Action":"sts:AssumeRole"}]}'
)


def queue_name(settings: Settings) -> str:
    """The confirmation queue's name for this tenant."""
    return f"engram-confirmations-{settings.tenant_id}"


def state_machine_name(settings: Settings) -> str:
    """The gate state machine's name for this tenant."""
    return f"engram-confirmation-gate-{settings.tenant_id}"


def _role_arn(iam_client: Any | None) -> str:
    if iam_client is None:
        return f"arn:aws:iam::{LOCAL_ACCOUNT_ID}:role/{ROLE_NAME}"
    try:
        return str(iam_client.get_role(RoleName=ROLE_NAME)["Role"]["Arn"])
    except iam_client.exceptions.NoSuchEntityException:
        created = iam_client.create_role(RoleName=ROLE_NAME, AssumeRolePolicyDocument=_TRUST_POLICY)
        return str(created["Role"]["Arn"])


def _existing_state_machine(sfn_client: Any, name: str) -> str | None:
    for page in sfn_client.get_paginator("list_state_machines").paginate():
        for machine in page.get("stateMachines", []):
            if machine["name"] == name:
                return str(machine["stateMachineArn"])
    return None


def create_gate_resources(
    sfn_client: Any, sqs_client: Any, settings: Settings, *, iam_client: Any | None = None,
) -> dict[str, str]:
    """Create (or find) the queue and state machine; ``ENGRAM_*`` env updates."""
    # The queue's attributes are the stack's (generated, see local/provisioning.py).
    queue_url = str(sqs_client.create_queue(
        QueueName=queue_name(settings), Attributes=dict(stack_shapes()["confirmation_queue"]),
    )["QueueUrl"])
    definition = render_definition(settings.table_name, queue_url)
    name = state_machine_name(settings)
    arn = _existing_state_machine(sfn_client, name)
    if arn is None:
        arn = str(sfn_client.create_state_machine(
            name=name, definition=definition, roleArn=_role_arn(iam_client), type="STANDARD",
        )["stateMachineArn"])
    else:
        sfn_client.update_state_machine(stateMachineArn=arn, definition=definition)
    return {env_names.STATE_MACHINE_ARN: arn, env_names.CONFIRMATION_QUEUE_URL: queue_url}
