"""Names shared by the stack, its tests and operators: outputs, functions, metrics."""

from __future__ import annotations

from typing import Final

# Stack outputs (CloudFormation output logical ids). Tests and docs/deploy.md use these.
OUTPUT_ENDPOINT_URL: Final = "McpEndpointUrl"
OUTPUT_API_URL: Final = "ApiBaseUrl"
OUTPUT_TABLE_NAME: Final = "MainTableName"
OUTPUT_KEY_TABLE_NAME: Final = "KeyTableName"
OUTPUT_PROJECTION_TABLE_NAME: Final = "ProjectionTableName"
OUTPUT_LEDGER_TABLE_NAME: Final = "LedgerTableName"
OUTPUT_STATE_MACHINE_ARN: Final = "ConfirmationGateArn"
OUTPUT_HOST_EVENT_BUS_NAME: Final = "HostEventBusName"
OUTPUT_AUDIENCE: Final = "HostTokenAudience"
OUTPUT_ALARM_TOPIC_ARN: Final = "AlarmTopicArn"

# The eleven Lambda functions; each is functions/<name>/handler.py::lambda_handler.
TOOL_FUNCTIONS: Final = ("search", "get", "capture", "request_admission", "withdraw", "forget")
FUNCTIONS: Final = (
    *TOOL_FUNCTIONS,
    "mcp_endpoint",
    "host_api",
    "projector",
    "confirmation_notifier",
    "expiry_sweeper",
)

# The request path (API Gateway → endpoint → tool; host API → request_admission): with
# ``snap_start`` these run from a SnapStart snapshot, invoked through their ``live`` alias.
SNAP_START_FUNCTIONS: Final = (*TOOL_FUNCTIONS, "mcp_endpoint", "host_api")
SNAP_START_ALIAS: Final = "live"

# The partition-key families (docs/storage.md) each function may touch in the main table:
# every one of its main-table item statements carries ``ForAllValues:StringLike
# dynamodb:LeadingKeys`` with these (a statement may be fenced narrower; together they
# cover exactly these) (IAM authorizes each element of a
# TransactWriteItems as its own item action, so the fence holds inside transactions too).
# tests/reliability/test_partition_fences.py runs each function on moto and checks that
# what it touches is inside its fence and that it uses every family it is given.
PROJECTOR_WRITE_PARTITIONS: Final = ("SCOPE#*",)
MAIN_TABLE_PARTITIONS: Final[dict[str, tuple[str, ...]]] = {
    "search": ("SCOPE#*", "JOURNAL#*"),
    "get": ("SCOPE#*", "JOURNAL#*"),
    "capture": ("IDEM#*", "JOURNAL#*", "SCOPE#*"),
    "request_admission": ("IDEM#*", "JOURNAL#*", "SCOPE#*", "EXPIRY#*"),
    "withdraw": ("IDEM#*", "JOURNAL#*", "SCOPE#*", "CONF#*"),
    "forget": ("IDEM#*", "JOURNAL#*", "SCOPE#*", "CONF#*"),
    "expiry_sweeper": ("IDEM#*", "JOURNAL#*", "SCOPE#*", "EXPIRY#*"),
    # Reads records (SCOPE#) and the journal events it advances the watermark over
    # (JOURNAL#); its one write, projection_invalidation, is fenced to SCOPE# alone.
    "projector": ("SCOPE#*", "JOURNAL#*"),
    # Confirmation items (the gate), and a workspace's records, guards, journal and expiry
    # entries for export and restore (gate/backup_routes.py); each statement is fenced to
    # the narrower family it needs (infra/constructs/access.py, _grant_host_api).
    "host_api": ("CONF#*", "SCOPE#*", "JOURNAL#*", "EXPIRY#*"),
    "confirmation_notifier": ("CONF#*",),
}
# The host API's statements, each fenced narrower than its whole fence: the gate's on
# confirmation items; export reads records, guards and the journal (and a restore's
# roll-back reads expiry entries); a restore batch-writes records, guards and expiry
# entries, and puts, moves and deletes the journal's head and its restore event.
HOST_CONFIRMATION_PARTITIONS: Final = ("CONF#*",)
HOST_BACKUP_READ_PARTITIONS: Final = ("SCOPE#*", "JOURNAL#*", "EXPIRY#*")
HOST_RESTORE_BATCH_PARTITIONS: Final = ("SCOPE#*", "EXPIRY#*")
HOST_RESTORE_JOURNAL_PARTITIONS: Final = ("JOURNAL#*",)
# The key table holds wrapped data keys only, under KEY#{tenant}#{workspace}.
KEY_TABLE_PARTITIONS: Final = ("KEY#*",)
# The forget ledger's one partition family (adapters/dynamodb/forget_ledger.py).
LEDGER_TABLE_PARTITIONS: Final = ("LEDGER#*",)

# Powertools metrics: one namespace per deployment; gated tools count refused confirmations.
# engram_memory.runtime: every tool emits ``error.<code>`` under one service dimension.
METRICS_NAMESPACE: Final = "EngramMemory"
TOOL_SERVICE_NAME: Final = "engram-memory"
GATE_FAILURE_METRIC: Final = "error.gate_failed"

# Environment variable names: engram_memory.env_names (one list for the stack, the
# settings and the local service).

# HTTP API routes.
ROUTE_MCP: Final = "POST /mcp"
ROUTE_METADATA: Final = "GET /.well-known/oauth-protected-resource"
ROUTE_METADATA_FOR_MCP: Final = "GET /.well-known/oauth-protected-resource/mcp"
ROUTE_HOST: Final = "ANY /host/{proxy+}"
