"""Which ranking channels a search uses, and the profile its receipt and cursor name.

Rules (docs/semantic.md, "Which channels a search uses"):

* ``lexical_and_semantic`` needs the semantic channel. None configured in this deployment,
  or configured with a managed (network) embedder that this request may not use →
  CAPABILITY_UNAVAILABLE (not retriable: retrying cannot change a deployment setting; the
  agent asks for ``lexical`` or reports to the operator). Configured but failing (model
  load, index error, timeout) → RANKING_UNAVAILABLE (retriable). Never a lexical fallback.
* ``lexical`` uses the lexical channel; it is fused with the semantic one only when the
  host enabled that (``fuse_lexical``), and then a semantic failure leaves it lexical.
* A managed embedder is used only when the host allows the network for this deployment
  AND the request says ``network: "allow"``; ``allow`` alone grants nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engram_memory.domain.errors import CapabilityUnavailable
from engram_memory.domain.fusion import (
    ChannelReceipt,
    FusionConfig,
    fuse,
    fused_config_digest,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engram_memory.contract.inputs import CapabilityPolicy
    from engram_memory.domain.ranking import RankingConfig, ScoredRecord
    from engram_memory.services.semantic import SemanticChannel

LEXICAL_INDEX = "dynamodb-projection"


@dataclass(frozen=True, slots=True)
class RankingProfile:
    """What one ranking was made with: named in the receipt and bound into page cursors."""

    profile: str
    version: str
    config_digest: str
    channels: tuple[ChannelReceipt, ...]


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    """The deployment's semantic channel (or None) and the host's fusion settings."""

    semantic: SemanticChannel | None = None
    fusion: FusionConfig = field(default_factory=FusionConfig)
    fuse_lexical: bool = False
    host_allows_network: bool = False


class ChannelPlanner:
    """Decides per request whether the semantic channel is used; fuses the rankings."""

    def __init__(self, lexical: RankingConfig, settings: ChannelSettings) -> None:
        self._lexical = lexical
        self._settings = settings
        lexical_receipt = ChannelReceipt(channel="lexical", model=lexical.profile,
                                         version=lexical.version, index=LEXICAL_INDEX,
                                         config_digest=lexical.config_digest)
        self.lexical_profile = RankingProfile(lexical.profile, lexical.version,
                                              lexical.config_digest, (lexical_receipt,))
        self._lexical_receipt = lexical_receipt

    @property
    def semantic(self) -> SemanticChannel | None:
        """The configured semantic channel."""
        return self._settings.semantic

    def wants_semantic(self, policy: CapabilityPolicy) -> bool:
        """Whether this request uses the semantic channel; refuses what cannot be served."""
        required = policy.minimum_channels == "lexical_and_semantic"
        channel = self._settings.semantic
        usable = channel is not None and (
            not channel.uses_network
            or (self._settings.host_allows_network and policy.network == "allow"))
        if required and not usable:
            raise CapabilityUnavailable
        return usable and (required or self._settings.fuse_lexical)

    def fused_profile(self) -> RankingProfile:
        """The profile of a ranking that used the semantic channel."""
        channel = self._settings.semantic
        assert channel is not None  # only called after wants_semantic() said yes
        fusion = self._settings.fusion
        semantic = channel.receipt()
        channels = ((semantic,) if fusion.lexical_weight == 0
                    else (self._lexical_receipt, semantic))
        return RankingProfile(fusion.profile, fusion.version,
                              fused_config_digest(fusion, channels), channels)

    def fuse(self, lexical: Sequence[ScoredRecord],
             semantic: Sequence[ScoredRecord]) -> Sequence[ScoredRecord]:
        """The fused order (domain/fusion.py)."""
        return fuse(lexical, semantic, self._settings.fusion)
