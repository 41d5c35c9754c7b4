"""The confirmation gate: the shared ASL state machine, its queue + DLQ, the host event bus.

The definition is the one JSON file the local runtime also runs
(``shared/engram_memory/gate/confirmation_gate.asl.json``). Its ``${Name}`` placeholders
become CloudFormation DefinitionSubstitutions, and the state machine role is derived from
the service integrations the file actually uses, so the two can never drift apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.functions import SPECS
from infra.constructs.retention import retention
from infra.constructs.storage import CONFIRMATION_KEYS, table_statement
from infra.package import REPO_ROOT

if TYPE_CHECKING:
    from aws_cdk import aws_dynamodb as dynamodb

    from infra.constructs.keys import TenantKeys
    from infra.tenant_config import TenantConfig

ASL_PATH: Final = REPO_ROOT / "shared" / "engram_memory" / "gate" / "confirmation_gate.asl.json"
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
# Service integration -> the IAM action it needs and the resource it acts on.
_INTEGRATIONS: Final = {
    "arn:aws:states:::dynamodb:putItem": ("dynamodb:PutItem", "table"),
    "arn:aws:states:::dynamodb:updateItem": ("dynamodb:UpdateItem", "table"),
    "arn:aws:states:::dynamodb:getItem": ("dynamodb:GetItem", "table"),
    "arn:aws:states:::dynamodb:deleteItem": ("dynamodb:DeleteItem", "table"),
    "arn:aws:states:::sqs:sendMessage": ("sqs:SendMessage", "queue"),
    "arn:aws:states:::sqs:sendMessage.waitForTaskToken": ("sqs:SendMessage", "queue"),
}
# A confirmation is decidable for at most this long (engram_memory.services.confirmation
# MAX_TTL_SECONDS); the host must hear of it early in that window, so every delivery
# attempt of its queue message happens inside it.
DECISION_WINDOW_S: Final = 300
NOTIFIER_TIMEOUT_S: Final = SPECS["confirmation_notifier"].timeout_s
# A failed or timed-out notifier run hides its message this long. Lambda needs at least
# the function timeout; AWS suggests 6x for throttled retries, but 6x would hide a request
# for a minute per failure: 3x, and a duplicate delivery is harmless (the token store is
# conditional, the notification names its confirmation).
QUEUE_VISIBILITY_S: Final = 3 * NOTIFIER_TIMEOUT_S
# Receives before the DLQ (AWS: at least 5 for a Lambda event source, so throttling alone
# never parks a message); 5 x 30 s = 150 s, inside the decision window.
NOTIFIER_RECEIVES: Final = 5


def read_definition(path: Path = ASL_PATH) -> str:
    """The ASL text exactly as shared with the local runtime."""
    return path.read_text(encoding="utf-8")


def placeholders(definition: str) -> set[str]:
    """The ``${Name}`` substitutions the definition expects."""
    return set(_PLACEHOLDER.findall(definition))


def task_resources(definition: str) -> set[str]:
    """The ``Resource`` of every Task state (nested Parallel/Map branches included)."""
    return set(_walk_resources(json.loads(definition)))


def _walk_resources(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if node.get("Type") == "Task" and isinstance(node.get("Resource"), str):
            yield node["Resource"]
        for value in node.values():
            yield from _walk_resources(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk_resources(value)


class ConfirmationGate(Construct):
    """Standard workflow per confirmation; the queue carries task tokens to the notifier."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TenantConfig,
                 table: dynamodb.ITable, keys: TenantKeys) -> None:
        """Build the queue pair, the host event bus and the state machine."""
        super().__init__(scope, construct_id)
        self._config = config
        self._table = table
        self._keys = keys
        self.dead_letter_queue, self.queue = self._build_queues()
        self.host_bus = self._build_host_bus()
        self.definition = read_definition()
        self.state_machine = self._build_state_machine()

    def _build_queues(self) -> tuple[sqs.Queue, sqs.Queue]:
        dlq = sqs.Queue(
            self, "ConfirmationDlq",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        queue = sqs.Queue(
            self, "ConfirmationQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(QUEUE_VISIBILITY_S),
            # A confirmation lives at most 300 s; an older message is useless.
            retention_period=Duration.minutes(15),
            dead_letter_queue=sqs.DeadLetterQueue(queue=dlq,
                                                  max_receive_count=NOTIFIER_RECEIVES),
        )
        return dlq, queue

    def _build_host_bus(self) -> events.EventBus:
        # The host subscribes to confirmation requests with its own rules (cross-account
        # targets allowed); the notifier is the only publisher.
        return events.EventBus(self, "HostEventBus",
                               event_bus_name=f"engram-memory-{self._config.tenant_id}-host")

    def _substitutions(self) -> dict[str, str]:
        available = {
            "TableName": self._table.table_name,
            "QueueUrl": self.queue.queue_url,
            "ConfirmationQueueUrl": self.queue.queue_url,
        }
        missing = placeholders(self.definition) - set(available)
        if missing:
            raise ValueError(f"confirmation gate ASL uses unknown substitutions: {sorted(missing)}")
        return {name: available[name] for name in sorted(placeholders(self.definition))}

    def _build_state_machine(self) -> sfn.StateMachine:
        log_group = logs.LogGroup(
            self, "GateLogs",
            log_group_name=f"/aws/vendedlogs/states/engram-memory-{self._config.tenant_id}-gate",
            retention=retention(self._config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        machine = sfn.StateMachine(
            self, "ConfirmationGate",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(self.definition),
            definition_substitutions=self._substitutions(),
            tracing_enabled=True,
            # Execution data (digests, refs, task tokens) stays out of the logs.
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL,
                                include_execution_data=False),
        )
        for statement in self._integration_statements():
            machine.add_to_role_policy(statement)
        return machine

    def _integration_statements(self) -> list[iam.PolicyStatement]:
        by_target: dict[str, set[str]] = {"table": set(), "queue": set()}
        for resource in task_resources(self.definition):
            if resource not in _INTEGRATIONS:
                raise ValueError(f"confirmation gate ASL uses an unmapped integration: {resource}")
            action, target = _INTEGRATIONS[resource]
            by_target[target].add(action)
        statements = []
        if by_target["table"]:
            statements.append(table_statement(self._table, sorted(by_target["table"]),
                                              leading_keys=CONFIRMATION_KEYS))
            statements.append(self._keys.storage_statement(write=True))
        if by_target["queue"]:
            statements.append(iam.PolicyStatement(actions=sorted(by_target["queue"]),
                                                  resources=[self.queue.queue_arn]))
        return statements
