"""Least privilege, function by function: each ``_grant_<function>`` is the whole of its access.

Reading this file is reading the security model (docs/deploy.md, "Who may do what"):
search and get read; only capture generates candidate data keys; only request_admission
decrypts them; every main-table statement is fenced to the partition families its function
uses (``MAIN_TABLE_PARTITIONS``: the notifier touches confirmation items, ``CONF#``, only;
the host API those and, for export and restore, a workspace's partitions); nothing has a
wildcard action, and no data statement has a wildcard resource.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_iam as iam
from engram_memory.adapters.dynamodb.waiting import INDEX_NAME as WAITING_INDEX

from infra.constructs.keys import STREAM_READ_SERVICES
from infra.constructs.storage import (
    READ,
    TRANSACT_WRITE,
    stream_statements,
    table_statement,
)
from infra.constructs.vectors import PROJECTOR_ACTIONS, SEARCH_ACTIONS, titan_statement
from infra.names import (
    HOST_BACKUP_READ_PARTITIONS,
    HOST_CONFIRMATION_PARTITIONS,
    HOST_RESTORE_BATCH_PARTITIONS,
    HOST_RESTORE_JOURNAL_PARTITIONS,
    KEY_TABLE_PARTITIONS,
    LEDGER_TABLE_PARTITIONS,
    MAIN_TABLE_PARTITIONS,
    PROJECTOR_WRITE_PARTITIONS,
    TOOL_FUNCTIONS,
)

if TYPE_CHECKING:
    from aws_cdk import aws_secretsmanager as secretsmanager

    from infra.constructs.functions import EngramFunctions
    from infra.constructs.gate import ConfirmationGate
    from infra.constructs.keys import TenantKeys
    from infra.constructs.storage import TenantStorage
    from infra.constructs.vectors import VectorStore

TASK_TOKEN_ACTIONS = ("states:SendTaskSuccess", "states:SendTaskFailure")
_GET_AND_DELETE = ("dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem")
# What DynamoRecordReader.mark_projection_complete touches: the key and one attribute.
PROJECTOR_MAIN_ATTRIBUTES = ("pk", "sk", "projection_invalidation")


class AccessGrants:
    """Applies every function's permissions to its own role (call :meth:`apply` once)."""

    def __init__(self, *, functions: EngramFunctions, storage: TenantStorage, keys: TenantKeys,
                 gate: ConfirmationGate, page_cursor_secret: secretsmanager.ISecret,
                 vectors: VectorStore | None = None, managed_embedder: bool = False) -> None:
        """Bind the resources the grants refer to."""
        self._vectors = vectors
        self._managed_embedder = managed_embedder
        self._functions = functions
        self._storage = storage
        self._keys = keys
        self._gate = gate
        self._secret = page_cursor_secret

    def apply(self) -> None:
        """Grant each function exactly what its handler uses."""
        for name in self._functions.functions:
            getattr(self, f"_grant_{name}")(self._functions.roles[name])

    def _add(self, role: iam.IRole, *statements: iam.PolicyStatement) -> None:
        for statement in statements:
            role.add_to_principal_policy(statement)

    def _main(self, name: str, actions: tuple[str, ...]) -> iam.PolicyStatement:
        """Item actions on the main table, fenced to the function's partition families."""
        return table_statement(self._storage.main, actions,
                               leading_keys=MAIN_TABLE_PARTITIONS[name])

    def _wrapped_keys(self, actions: tuple[str, ...]) -> iam.PolicyStatement:
        return table_statement(self._storage.keys, actions, leading_keys=KEY_TABLE_PARTITIONS)

    def _ledger_entry(self) -> iam.PolicyStatement:
        """Putting a forget-ledger entry (in the move's transaction); nothing else on it."""
        return table_statement(self._storage.ledger, ("dynamodb:PutItem",),
                               leading_keys=LEDGER_TABLE_PARTITIONS)

    def _reader(self, role: iam.IRole, name: str) -> None:
        self._add(role, self._main(name, READ), self._keys.storage_statement(write=False))

    def _mutator(self, role: iam.IRole, name: str) -> None:
        # One TransactWriteItems per mutation: idempotency, state, journal, confirmation.
        self._add(role, self._main(name, (*READ, *TRANSACT_WRITE)),
                  self._keys.storage_statement(write=True))

    def _grant_search(self, role: iam.IRole) -> None:
        self._reader(role, "search")
        self._add(role, table_statement(self._storage.projection, READ))
        # The page cursor HMAC secret, read once per container.
        self._add(role, iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"],
                                            resources=[self._secret.secret_arn]))
        self._semantic(role, SEARCH_ACTIONS)

    def _semantic(self, role: iam.IRole, actions: tuple[str, ...]) -> None:
        """The semantic channel: the vector index (and the managed model, if configured)."""
        if self._vectors is None:
            return
        write = actions == PROJECTOR_ACTIONS
        self._add(role, self._vectors.statement(actions), self._vectors.key_statement(write=write))
        if self._managed_embedder:
            self._add(role, titan_statement(self._vectors))

    def _grant_get(self, role: iam.IRole) -> None:
        self._reader(role, "get")

    def _grant_capture(self, role: iam.IRole) -> None:
        self._mutator(role, "capture")
        # Capture only ever puts a wrapped key (in its transaction); it never reads one back.
        self._add(role, self._wrapped_keys(("dynamodb:PutItem",)))
        self._keys.allow_generate_data_key(role)

    def _grant_request_admission(self, role: iam.IRole) -> None:
        self._mutator(role, "request_admission")
        # Decrypt once, store the accepted record, shred the candidate key (same transaction).
        # The wrapped key is read in the same BatchGetItem as the candidate and its
        # ciphertext (one round trip: docs/write_path.md).
        self._add(role, self._wrapped_keys((*_GET_AND_DELETE, "dynamodb:BatchGetItem")))
        self._keys.allow_decrypt(role)

    def _grant_withdraw(self, role: iam.IRole) -> None:
        self._mutator(role, "withdraw")
        # Deleting the wrapped key in the withdraw transaction is the shred.
        self._add(role, self._wrapped_keys(_GET_AND_DELETE), self._ledger_entry())

    def _grant_forget(self, role: iam.IRole) -> None:
        # The projector completes projection_invalidation; forget never touches the index.
        self._mutator(role, "forget")
        self._add(role, self._ledger_entry())

    def _grant_mcp_endpoint(self, role: iam.IRole) -> None:
        self._add(role, iam.PolicyStatement(actions=["lambda:InvokeFunction"],
                                            resources=self._functions.arns(TOOL_FUNCTIONS)))

    def _grant_host_api(self, role: iam.IRole) -> None:
        machine = self._gate.state_machine.state_machine_arn
        self._add(
            role,
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[machine]),
            # The task token is the capability (only CONF# items hold it, and only this
            # gate's). Resource "*": AWS does not settle whether these actions take the
            # state machine's ARN (docs/deploy.md, "Grants AWS does not settle").
            iam.PolicyStatement(actions=list(TASK_TOKEN_ACTIONS), resources=["*"]),
            table_statement(self._storage.main, ("dynamodb:GetItem", "dynamodb:UpdateItem"),
                            leading_keys=HOST_CONFIRMATION_PARTITIONS),
            # Listing what waits: Query of the sparse waiting index, whose partition values
            # are the workspaces' CONF# values (docs/confirmation.md, "Listing what waits").
            table_statement(self._storage.main, ("dynamodb:Query",),
                            leading_keys=HOST_CONFIRMATION_PARTITIONS, index=WAITING_INDEX),
            *self._backup_statements(),
            self._keys.storage_statement(write=True),
            # Adjudication runs in request_admission, the one function that may Decrypt; a
            # mem0 migration captures and admits through capture and request_admission.
            iam.PolicyStatement(actions=["lambda:InvokeFunction"],
                                resources=self._functions.arns(("request_admission",
                                                                "capture"))),
        )

    def _backup_statements(self) -> tuple[iam.PolicyStatement, ...]:
        """Export and restore (gate/backup_routes.py, docs/backup.md, "Deployed stack").

        Export reads a workspace's records, guards and journal (DynamoExportReader); a
        restore batch-writes the staged records, guards and expiry entries, reads the
        source's record states (BatchGetItem), and puts, moves and deletes the target's
        journal head and puts its restore event (DynamoRestoreWriter). Single-item writes
        reach journal partitions only: a record item is only ever put whole (staging) or
        deleted in a batch (the roll-back of a workspace the restore fenced while empty).
        The projector rebuilds the projection and vectors from the main table's stream, and
        nothing here reads the forget ledger or any key, so none of that is granted.
        """
        main = self._storage.main
        return (
            table_statement(main, READ, leading_keys=HOST_BACKUP_READ_PARTITIONS),
            table_statement(main, ("dynamodb:BatchWriteItem",),
                            leading_keys=HOST_RESTORE_BATCH_PARTITIONS),
            table_statement(main, ("dynamodb:PutItem", "dynamodb:UpdateItem",
                                   "dynamodb:DeleteItem"),
                            leading_keys=HOST_RESTORE_JOURNAL_PARTITIONS),
        )

    def _grant_projector(self, role: iam.IRole) -> None:
        self._add(
            role,
            *stream_statements(self._storage.main),
            table_statement(self._storage.projection, (
                *READ, "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                "dynamodb:BatchWriteItem")),
            # Reads record items and their parts (DynamoRecordReader: BatchGetItem) and the
            # journal events between the watermark and an event's cursor (Query) ...
            self._main("projector", READ),
            # ... and marks projection_invalidation complete after a forget: that attribute
            # of a SCOPE# item and nothing else, so a stream-fed function cannot, say, flip
            # a CONF# confirmation to approved or rewrite a record's state.
            iam.PolicyStatement(
                actions=["dynamodb:UpdateItem"], resources=[self._storage.main.table_arn],
                conditions={
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(
                        PROJECTOR_WRITE_PARTITIONS)},
                    "ForAllValues:StringEquals": {"dynamodb:Attributes": list(
                        PROJECTOR_MAIN_ATTRIBUTES)},
                    "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
                }),
            # Reads (stream records, record items) and the marker write, through either
            # DynamoDB endpoint.
            self._keys.storage_statement(write=True, services=STREAM_READ_SERVICES),
        )
        self._semantic(role, PROJECTOR_ACTIONS)

    def _grant_confirmation_notifier(self, role: iam.IRole) -> None:
        # Queue consumption is granted by its event source mapping.
        self._add(
            role,
            self._main("confirmation_notifier", ("dynamodb:GetItem", "dynamodb:UpdateItem")),
            self._keys.storage_statement(write=True),
            iam.PolicyStatement(actions=["events:PutEvents"],
                                resources=[self._gate.host_bus.event_bus_arn]),
        )

    def _grant_expiry_sweeper(self, role: iam.IRole) -> None:
        self._mutator(role, "expiry_sweeper")
