"""The tenant's operator dashboard: one CloudWatch dashboard, built from what the code emits.

Custom metrics come from the names the code publishes (Powertools, namespace
``EngramMemory``): ``<tool>.ok`` and ``error.<code>`` under the tools' service dimension,
``confirmation.requested|approve|reject`` from the host API, ``ColdStart`` per function.
AWS metrics are the ones each service documents (docs/dashboard.md lists them);
tests/infra/test_dashboard.py reads the synthesized body and checks every metric against
the code and that list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import CATALOG

from infra.constructs.functions import service_name
from infra.names import METRICS_NAMESPACE, TOOL_SERVICE_NAME

if TYPE_CHECKING:
    from aws_cdk import aws_apigatewayv2 as apigwv2
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_sqs as sqs
    from aws_cdk import aws_stepfunctions as sfn

_PERIOD: Final = Duration.minutes(5)
_WIDTH: Final = 12
_HEIGHT: Final = 6
HOST_API_SERVICE: Final = "engram-host-api"
# What the code counts (runtime.run_tool / run_adjudication, gate/host_api.py).
UNEXPECTED: Final = "UNEXPECTED"
HOST_DECISIONS: Final = ("requested", "approve", "reject")


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class OperatorDashboard(Construct):
    """Calls, errors by code, latency percentiles, throttles, projector lag and DLQs, the
    gate's backlog and outcomes, cold starts: one dashboard per tenant stack."""

    def __init__(self, scope: Construct, construct_id: str, *, tenant_id: str,
                 functions: dict[str, lambda_.Function], projector_dlq: sqs.IQueue,
                 confirmation_queue: sqs.IQueue, confirmation_dlq: sqs.IQueue,
                 state_machine: sfn.IStateMachine, api: apigwv2.HttpApi) -> None:
        """Lay the widgets out, two per row."""
        super().__init__(scope, construct_id)
        self._functions = functions
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"engram-memory-{tenant_id}",
            default_interval=Duration.hours(3),
        )
        rows: list[Sequence[cloudwatch.IWidget]] = [
            [self._text(tenant_id)],
            [self._tool_calls(), self._errors_by_code()],
            [self._function_errors(), self._throttles()],
            *[[self._duration(p)] for p in ("p50", "p95", "p99")],
            [self._projector_lag(), self._dead_letters(projector_dlq, confirmation_dlq)],
            [self._gate_backlog(state_machine, confirmation_queue),
             self._gate_outcomes(state_machine)],
            [self._cold_starts(), self._api(api)],
        ]
        for row in rows:
            self.dashboard.add_widgets(*row)

    @staticmethod
    def _text(tenant_id: str) -> cloudwatch.TextWidget:
        return cloudwatch.TextWidget(
            markdown=(f"# engram-memory · {tenant_id}\n"
                      "Calls and errors are the tools' own counts (`EngramMemory`); "
                      "latency, throttles and lag are AWS's. See docs/dashboard.md."),
            width=24, height=2)

    @staticmethod
    def _custom(name: str, service: str, **dimensions: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(namespace=METRICS_NAMESPACE, metric_name=name,
                                 dimensions_map={**dimensions, "service": service},
                                 statistic="Sum", period=_PERIOD, label=name)

    def _graph(self, title: str, metrics: Sequence[cloudwatch.IMetric], *, width: int = _WIDTH,
               stacked: bool = False, label: str = "Count") -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(title=title, left=list(metrics), width=width, height=_HEIGHT,
                                      stacked=stacked,
                                      left_y_axis=cloudwatch.YAxisProps(label=label, min=0))

    def _tool_calls(self) -> cloudwatch.GraphWidget:
        calls = [self._custom(f"{tool.value}.ok", TOOL_SERVICE_NAME) for tool in Tool]
        calls.append(self._custom("adjudication.ok", TOOL_SERVICE_NAME))
        return self._graph("Successful calls by tool", calls, stacked=True)

    def _errors_by_code(self) -> cloudwatch.GraphWidget:
        codes = [*sorted(CATALOG), UNEXPECTED]
        return self._graph("Refused calls by error code (all tools)",
                           [self._custom(f"error.{code}", TOOL_SERVICE_NAME) for code in codes],
                           stacked=True)

    def _per_function(self, metric: str, statistic: str) -> list[cloudwatch.IMetric]:
        return [fn.metric(metric, statistic=statistic, period=_PERIOD, label=name)
                for name, fn in self._functions.items()]

    def _function_errors(self) -> cloudwatch.GraphWidget:
        return self._graph("Invocation errors by function (AWS/Lambda Errors)",
                           self._per_function("Errors", "Sum"))

    def _throttles(self) -> cloudwatch.GraphWidget:
        return self._graph("Throttles by function", self._per_function("Throttles", "Sum"))

    def _duration(self, percentile: str) -> cloudwatch.GraphWidget:
        return self._graph(f"Duration {percentile} by function (ms)",
                           self._per_function("Duration", percentile), width=24, label="ms")

    def _projector_lag(self) -> cloudwatch.GraphWidget:
        age = self._functions["projector"].metric("IteratorAge", statistic="Maximum",
                                                  period=_PERIOD, label="iterator age (max)")
        return self._graph("Projector lag: stream iterator age (ms)", [age], label="ms")

    def _dead_letters(self, projector_dlq: sqs.IQueue,
                      confirmation_dlq: sqs.IQueue) -> cloudwatch.GraphWidget:
        depth = [queue.metric("ApproximateNumberOfMessagesVisible", statistic="Maximum",
                              period=_PERIOD, label=label)
                 for label, queue in (("projector DLQ", projector_dlq),
                                      ("confirmation DLQ", confirmation_dlq))]
        return self._graph("Dead-letter queue depth", depth)

    def _gate_backlog(self, machine: sfn.IStateMachine,
                      queue: sqs.IQueue) -> cloudwatch.GraphWidget:
        started = machine.metric_started(period=_PERIOD, statistic="Sum")
        ended = {f"e{i}": m for i, m in enumerate((
            machine.metric_succeeded(period=_PERIOD, statistic="Sum"),
            machine.metric_failed(period=_PERIOD, statistic="Sum"),
            machine.metric_timed_out(period=_PERIOD, statistic="Sum"),
            machine.metric_aborted(period=_PERIOD, statistic="Sum")))}
        # An execution lives while its confirmation waits (≤ 300 s) or its approval window
        # is open (≤ 30 s): started minus ended, summed over the range, is what is in flight.
        in_flight = cloudwatch.MathExpression(
            expression="RUNNING_SUM(started - " + " - ".join(f"FILL({k}, 0)" for k in ended) + ")",
            using_metrics={"started": started, **ended},
            label="confirmations in flight (running sum over the range)", period=_PERIOD)
        undelivered = queue.metric("ApproximateNumberOfMessagesVisible", statistic="Maximum",
                                   period=_PERIOD, label="requests not yet handed to the notifier")
        return self._graph("Confirmation backlog", [in_flight, undelivered])

    def _gate_outcomes(self, machine: sfn.IStateMachine) -> cloudwatch.GraphWidget:
        decided = [self._custom(f"confirmation.{what}", HOST_API_SERVICE)
                   for what in HOST_DECISIONS]
        refused = self._custom("error.gate_failed", TOOL_SERVICE_NAME)
        # A reviewer reading a held candidate's content: a read, not a decision.
        reviewed = self._custom("adjudication.inspect", TOOL_SERVICE_NAME)
        workflow = [machine.metric_failed(period=_PERIOD, statistic="Sum",
                                          label="workflow executions failed"),
                    machine.metric_timed_out(period=_PERIOD, statistic="Sum",
                                             label="workflow executions timed out")]
        return self._graph("Gate: requests, decisions, reviews, refusals",
                           [*decided, reviewed, refused, *workflow])

    def _cold_starts(self) -> cloudwatch.GraphWidget:
        starts = [self._custom("ColdStart", service_name(name),
                               function_name=fn.function_name).with_(label=name)
                  for name, fn in self._functions.items()]
        return self._graph("Cold starts by function", starts, stacked=True)

    def _api(self, api: apigwv2.HttpApi) -> cloudwatch.GraphWidget:
        return self._graph("HTTP API responses", [
            api.metric_count(period=_PERIOD, statistic="Sum", label="requests"),
            api.metric_client_error(period=_PERIOD, statistic="Sum", label="4xx"),
            api.metric_server_error(period=_PERIOD, statistic="Sum", label="5xx"),
        ])
