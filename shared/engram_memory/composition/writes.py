"""Ports the mutating tools share: the confirmation gate, the admission policy, KMS."""

from __future__ import annotations

from typing import Any

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationGate
from engram_memory.adapters.kms.key_vault import KmsKeyVault
from engram_memory.services.policy import SettingsAdmissionPolicy


def gate() -> Any:
    """The Step Functions confirmation gate (docs/confirmation.md).

    A gated tool's commit consumes the human approval named by the host context, or fails
    with gate_failed.
    """
    return bootstrap.port("gate", DynamoConfirmationGate(bootstrap.dynamodb_client(),
                                                         bootstrap.settings().table_name))


def policy() -> Any:
    """The deployment's admission policy (or a test's)."""
    s = bootstrap.settings()
    return bootstrap.port("policy", SettingsAdmissionPolicy(
        s.admission_policy_id, s.admission_policy_version, s.admission_mode))


def key_vault() -> KmsKeyVault:
    """Data keys under the deployment's KMS key."""
    return KmsKeyVault(bootstrap.kms_client(), bootstrap.settings().kms_key_id)
