"""CloudWatch alarms on the failure signals an operator must act on, to one SNS topic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.names import GATE_FAILURE_METRIC, METRICS_NAMESPACE, TOOL_SERVICE_NAME

if TYPE_CHECKING:
    from aws_cdk import aws_apigatewayv2 as apigwv2
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_sqs as sqs
    from aws_cdk import aws_stepfunctions as sfn

    from infra.tenant_config import TenantConfig

_PERIOD = Duration.minutes(5)


def alarm_publish_statement(topic: sns.ITopic) -> iam.PolicyStatement:
    """CloudWatch may publish to the topic, for this account's alarms only.

    ``enforce_ssl`` gives the topic a resource policy of its own, which replaces SNS's
    default one: without this statement no alarm would ever be delivered.
    """
    stack = Stack.of(topic)
    return iam.PolicyStatement(
        sid="CloudWatchAlarmsPublish",
        principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
        actions=["sns:Publish"],
        resources=[topic.topic_arn],
        conditions={
            "ArnLike": {"aws:SourceArn": stack.format_arn(
                service="cloudwatch", resource="alarm", resource_name="*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME)},
            "StringEquals": {"aws:SourceAccount": stack.account},
        },
    )


class Monitoring(Construct):
    """Errors and throttles per function, DLQ depth, gate failures, API 5xx, stream lag."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TenantConfig,
                 key: kms.IKey) -> None:
        """Create the (encrypted, TLS-only) alarm topic; alarms are added by ``watch_*``."""
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True,
                               display_name=f"engram-memory {config.tenant_id} alarms")
        self.topic.add_to_resource_policy(alarm_publish_statement(self.topic))
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        self._action = actions.SnsAction(self.topic)

    def _alarm(self, construct_id: str, metric: cloudwatch.IMetric, description: str, *,
               threshold: float = 1) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self, construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(self._action)
        return alarm

    def watch_functions(self, functions: dict[str, lambda_.Function]) -> None:
        """One errors and one throttles alarm per function."""
        for name, function in functions.items():
            pascal = "".join(p.capitalize() for p in name.split("_"))
            self._alarm(f"{pascal}Errors", function.metric_errors(period=_PERIOD),
                        f"{name}: invocation errors")
            self._alarm(f"{pascal}Throttles", function.metric_throttles(period=_PERIOD),
                        f"{name}: throttled invocations")

    def watch_queue(self, construct_id: str, queue: sqs.IQueue, what: str) -> None:
        """A message in a dead-letter queue is a lost notification or projection."""
        self._alarm(construct_id, queue.metric_approximate_number_of_messages_visible(
            period=_PERIOD, statistic="Maximum"), f"{what}: messages in the dead-letter queue")

    def watch_gate(self, state_machine: sfn.IStateMachine) -> None:
        """Gate machinery failures, and tools refusing calls with ``gate_failed``."""
        self._alarm("GateExecutionsFailed", state_machine.metric_failed(period=_PERIOD),
                    "confirmation gate: executions failed")
        refused = cloudwatch.Metric(
            namespace=METRICS_NAMESPACE, metric_name=GATE_FAILURE_METRIC,
            dimensions_map={"service": TOOL_SERVICE_NAME}, statistic="Sum", period=_PERIOD)
        # A few refusals are humans letting approvals lapse; a burst is worth a look.
        self._alarm("GateFailures", refused, "gated tools: calls refused with gate_failed",
                    threshold=5)

    def watch_api(self, api: apigwv2.HttpApi) -> None:
        """Server errors seen by clients."""
        self._alarm("Api5xx", api.metric_server_error(period=_PERIOD, statistic="Sum"),
                    "HTTP API: 5xx responses")

    def watch_projector(self, projector: lambda_.Function) -> None:
        """The search index falls behind the table (records stay invisible to search)."""
        age = projector.metric("IteratorAge", period=_PERIOD, statistic="Maximum")
        self._alarm("ProjectorLag", age, "projector: stream iterator age over 5 minutes",
                    threshold=300_000)
