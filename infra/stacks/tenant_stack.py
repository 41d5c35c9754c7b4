"""TenantStack: one isolated engram-memory deployment (tables, keys, functions, gate, API)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from engram_memory import env_names as env
from engram_memory.domain.context import Tool

from infra import names
from infra.constructs.access import AccessGrants
from infra.constructs.api import EngramApi
from infra.constructs.dashboard import OperatorDashboard
from infra.constructs.functions import EngramFunctions, stack_environment
from infra.constructs.gate import ConfirmationGate
from infra.constructs.keys import TenantKeys
from infra.constructs.monitoring import Monitoring
from infra.constructs.storage import TenantStorage
from infra.constructs.vectors import VectorStore
from infra.stacks.acknowledgments import acknowledge_findings

if TYPE_CHECKING:
    from constructs import Construct

    from infra.tenant_config import TenantConfig


# A large record costs one TransactWriteItems per 25 distinct terms, one after another:
# 10 records per batch keep a batch far inside the projector's timeout (functions.py).
PROJECTOR_BATCH_SIZE = 10


class TenantStack(Stack):
    """Everything one tenant needs; nothing shared with another tenant's stack."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TenantConfig,
                 **kwargs: Any) -> None:
        """Compose the tenant's constructs from its configuration."""
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.keys = TenantKeys(self, "Keys", config=config)
        self.storage = TenantStorage(self, "Storage", key=self.keys.storage_key)
        self.vectors = (None if config.semantic_embedder == "none" else
                        VectorStore(self, "Vectors", tenant_id=config.tenant_id,
                                    dimension=config.embedding_dimension,
                                    key=self.keys.storage_key))
        self.gate = ConfirmationGate(self, "Gate", config=config, table=self.storage.main,
                                     keys=self.keys)
        self.page_cursor_secret = self._build_page_cursor_secret()
        self.functions = self._build_functions()
        AccessGrants(functions=self.functions, storage=self.storage, keys=self.keys,
                     gate=self.gate, page_cursor_secret=self.page_cursor_secret,
                     vectors=self.vectors,
                     managed_embedder=config.semantic_embedder == "bedrock-titan-v2").apply()
        self.projector_dlq = self._build_triggers()
        self.api = EngramApi(self, "Api", config=config,
                             mcp_endpoint=self.functions.entry_points["mcp_endpoint"],
                             host_api=self.functions.entry_points["host_api"])
        self.monitoring = self._build_monitoring()
        self.dashboard = OperatorDashboard(
            self, "Operator", tenant_id=config.tenant_id, functions=self.functions.functions,
            projector_dlq=self.projector_dlq, confirmation_queue=self.gate.queue,
            confirmation_dlq=self.gate.dead_letter_queue,
            state_machine=self.gate.state_machine, api=self.api.http_api)
        self._build_outputs()
        acknowledge_findings(self)

    def _build_page_cursor_secret(self) -> secretsmanager.Secret:
        # HMAC key of search page cursors; rotating it only turns open cursors STALE_PAGE.
        return secretsmanager.Secret(
            self, "PageCursorSecret",
            description=f"engram-memory {self.config.tenant_id}: page cursor HMAC key",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True, include_space=False),
            removal_policy=RemovalPolicy.DESTROY,
        )

    def _build_functions(self) -> EngramFunctions:
        environment = stack_environment(
            self.config,
            table=self.storage.main.table_name,
            key_table=self.storage.keys.table_name,
            projection=self.storage.projection.table_name,
            ledger=self.storage.ledger.table_name,
            kms_key_arn=self.keys.tenant_key.key_arn,
        )
        functions = EngramFunctions(self, "Functions", config=self.config,
                                    environment=environment)
        functions.add_environment("mcp_endpoint", {
            env.function_name(Tool(tool)): functions.invoke_name(tool)
            for tool in names.TOOL_FUNCTIONS
        })
        if self.config.allowed_origins:
            # Browser MCP clients: the transport's Origin check (the API answers CORS).
            functions.add_environment("mcp_endpoint", {
                env.ALLOWED_ORIGINS: ",".join(self.config.allowed_origins)})
        functions.add_environment("host_api", {
            env.STATE_MACHINE_ARN: self.gate.state_machine.state_machine_arn,
            env.function_name(Tool.REQUEST_ADMISSION):
                functions.invoke_name("request_admission"),
            # A mem0 migration captures through the capture function (gate/migration.py).
            env.function_name(Tool.CAPTURE): functions.invoke_name("capture"),
        })
        functions.add_environment("search", {
            env.PAGE_CURSOR_SECRET_ARN: self.page_cursor_secret.secret_arn,
        })
        if self.vectors is not None:
            for name in ("search", "projector"):
                functions.add_environment(name, self._semantic_environment(self.vectors))
        functions.add_environment("confirmation_notifier", {
            env.CONFIRMATION_QUEUE_URL: self.gate.queue.queue_url,
            env.CONFIRMATION_EVENT_BUS: self.gate.host_bus.event_bus_name,
        })
        return functions

    def _semantic_environment(self, vectors: VectorStore) -> dict[str, str]:
        config = self.config
        return {
            env.SEMANTIC_EMBEDDER: config.semantic_embedder,
            env.TITAN_DIMENSION: str(config.titan_dimension),
            env.VECTOR_BUCKET: vectors.bucket_name,
            env.VECTOR_INDEX: vectors.index_name,
            env.SEARCH_FUSE_LEXICAL: "true" if config.fuse_lexical else "false",
            env.HOST_ALLOWS_NETWORK: "true" if config.host_allows_network else "false",
        }

    def _build_triggers(self) -> sqs.Queue:
        fns = self.functions.functions
        # One confirmation per invocation: a slow or failing one never delays another.
        fns["confirmation_notifier"].add_event_source(sources.SqsEventSource(
            self.gate.queue, batch_size=1, report_batch_item_failures=True))
        projector_dlq = sqs.Queue(self, "ProjectorDlq",
                                  encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                                  retention_period=Duration.days(14))
        stream_arn = self.storage.main.table_stream_arn
        assert stream_arn is not None
        # Records of one key stay in order (one batch per shard at a time); a poison batch
        # is bisected, retried, then its batch metadata (shard, sequence range; never the
        # records, which the stream drops after 24 h) goes to the DLQ as the alarm's
        # evidence. Recovery is a rebuild from the main table: python -m
        # engram_memory.reproject (docs/deploy.md).
        lambda_.EventSourceMapping(
            self, "ProjectorStream",
            target=fns["projector"],
            event_source_arn=stream_arn,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=PROJECTOR_BATCH_SIZE,
            parallelization_factor=1,
            bisect_batch_on_error=True,
            retry_attempts=10,
            report_batch_item_failures=True,
            on_failure=sources.SqsDlq(projector_dlq),
        )
        events.Rule(self, "ExpirySchedule",
                    description="engram-memory: hourly expiry sweep",
                    schedule=events.Schedule.rate(Duration.hours(1)),
                    targets=[targets.LambdaFunction(fns["expiry_sweeper"], retry_attempts=2)])
        return projector_dlq

    def _build_monitoring(self) -> Monitoring:
        monitoring = Monitoring(self, "Monitoring", config=self.config,
                                key=self.keys.storage_key)
        monitoring.watch_functions(self.functions.functions)
        monitoring.watch_queue("ConfirmationDlqDepth", self.gate.dead_letter_queue,
                               "confirmation notifier")
        monitoring.watch_queue("ProjectorDlqDepth", self.projector_dlq, "projector")
        monitoring.watch_gate(self.gate.state_machine)
        monitoring.watch_api(self.api.http_api)
        monitoring.watch_projector(self.functions.functions["projector"])
        return monitoring

    def _build_outputs(self) -> None:
        for output_id, value, description in (
            (names.OUTPUT_ENDPOINT_URL, f"{self.api.url}mcp", "MCP endpoint (POST)"),
            (names.OUTPUT_API_URL, self.api.url, "HTTP API base URL (host routes: host/...)"),
            (names.OUTPUT_TABLE_NAME, self.storage.main.table_name, "Main table"),
            (names.OUTPUT_KEY_TABLE_NAME, self.storage.keys.table_name, "Wrapped key table"),
            (names.OUTPUT_PROJECTION_TABLE_NAME, self.storage.projection.table_name,
             "Search projection table"),
            (names.OUTPUT_LEDGER_TABLE_NAME, self.storage.ledger.table_name,
             "Forget ledger table (docs/forget-ledger.md)"),
            (names.OUTPUT_STATE_MACHINE_ARN, self.gate.state_machine.state_machine_arn,
             "Confirmation gate state machine"),
            (names.OUTPUT_HOST_EVENT_BUS_NAME, self.gate.host_bus.event_bus_name,
             "Event bus carrying confirmation requests to the host"),
            (names.OUTPUT_AUDIENCE, self.config.audience, "aud the host must put in its tokens"),
            (names.OUTPUT_ALARM_TOPIC_ARN, self.monitoring.topic.topic_arn, "Alarm topic"),
        ):
            CfnOutput(self, output_id, value=value, description=description)
