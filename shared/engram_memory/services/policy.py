"""The default admission policy (from stack settings) and the default evidence verifier.

POLICY_STALE: a candidate is bound at capture to the policy version then running. If the
function now runs an OLDER version than the one bound (a container with stale config
during a rollout), admission refuses with POLICY_STALE: a retry reaches a fresh
container. A candidate captured under an older version is evaluated under the current
one; the decision receipt records both versions. POLICY_UNAVAILABLE: the policy cannot be
evaluated (misconfigured mode or version, or an external policy port failing).
"""

from __future__ import annotations

from engram_memory.domain.errors import PolicyStale, PolicyUnavailable
from engram_memory.domain.records import DEFAULT_TRUST_CLASS
from engram_memory.services.ports.write import (
    AdmissionRequest,
    PolicyDecision,
    PolicyDescriptor,
    TrustVerdict,
)

_MODES = {mode.value: mode for mode in PolicyDecision}  # accept | reject | adjudicate


def version_key(version: str) -> tuple[int, ...]:
    """Dotted decimal version as a comparable tuple; PolicyUnavailable when malformed."""
    parts = version.split(".")
    if not all(part.isascii() and part.isdigit() for part in parts):
        raise PolicyUnavailable
    return tuple(int(part) for part in parts)


def check_not_stale(running: PolicyDescriptor, bound_version: str) -> None:
    """POLICY_STALE when the running policy is older than the one bound at capture."""
    if version_key(running.version) < version_key(bound_version):
        raise PolicyStale


class SettingsAdmissionPolicy:
    """Decides every candidate the same way: the host-configured mode."""

    def __init__(self, policy_id: str, version: str, mode: str) -> None:
        self._descriptor = PolicyDescriptor(policy_id=policy_id, version=version)
        self._mode = mode

    def descriptor(self) -> PolicyDescriptor:
        """The configured policy id and version (PolicyUnavailable when malformed)."""
        version_key(self._descriptor.version)
        if not self._descriptor.policy_id:
            raise PolicyUnavailable
        return self._descriptor

    def decide(self, request: AdmissionRequest) -> PolicyDecision:
        """accept | reject | adjudicate, per configuration."""
        decision = _MODES.get(self._mode)
        if decision is None:
            raise PolicyUnavailable
        return decision


class AssertedEvidenceVerifier:
    """The default verifier: no external check, so the evidence stays a claim."""

    VERIFIER_ID = "engram/asserted-v1"

    def verify(self, request: AdmissionRequest) -> TrustVerdict:
        """Trust class ``asserted`` for every candidate."""
        return TrustVerdict(trust_class=DEFAULT_TRUST_CLASS, verifier_id=self.VERIFIER_ID)
