"""Which channels a search uses (services/channels.py): the refusal codes and the network rule."""

from __future__ import annotations

import boto3
import pytest
from engram_memory.adapters.embedding.bedrock_titan import TitanV2Embedder
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from engram_memory.adapters.vectors.s3_vectors import S3VectorsIndex
from engram_memory.contract.inputs import CapabilityPolicy
from engram_memory.domain.errors import CapabilityUnavailable
from engram_memory.domain.ranking import DEFAULT_CONFIG
from engram_memory.services.channels import ChannelPlanner, ChannelSettings
from engram_memory.services.semantic import SemanticChannel

from tests.support.semantic import MODEL_DIR

LEXICAL = CapabilityPolicy(minimum_channels="lexical")
BOTH = CapabilityPolicy(minimum_channels="lexical_and_semantic")
BOTH_ALLOW = CapabilityPolicy(minimum_channels="lexical_and_semantic", network="allow")


def channel(managed: bool) -> SemanticChannel:
    client = boto3.client("s3vectors", region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="x")
    embedder = (TitanV2Embedder(boto3.client("bedrock-runtime", region_name="us-east-1"))
                if managed else OnnxEmbedder(MODEL_DIR))
    return SemanticChannel(embedder, S3VectorsIndex(client, "bucket", "index"))


def planner(**settings: object) -> ChannelPlanner:
    return ChannelPlanner(DEFAULT_CONFIG, ChannelSettings(**settings))  # type: ignore[arg-type]


def test_no_channel_refuses_a_semantic_requirement_as_not_retriable() -> None:
    with pytest.raises(CapabilityUnavailable):
        planner().wants_semantic(BOTH)
    assert planner().wants_semantic(LEXICAL) is False


def test_the_in_deployment_model_serves_forbid_and_lexical_fuses_only_if_the_host_says() -> None:
    local = channel(managed=False)
    assert planner(semantic=local).wants_semantic(BOTH) is True
    assert planner(semantic=local).wants_semantic(LEXICAL) is False
    assert planner(semantic=local, fuse_lexical=True).wants_semantic(LEXICAL) is True


def test_a_managed_model_needs_both_the_host_setting_and_the_request_allow() -> None:
    managed = channel(managed=True)
    with pytest.raises(CapabilityUnavailable):
        planner(semantic=managed, host_allows_network=True).wants_semantic(BOTH)
    with pytest.raises(CapabilityUnavailable):
        planner(semantic=managed).wants_semantic(BOTH_ALLOW)  # allow alone grants nothing
    assert planner(semantic=managed, host_allows_network=True).wants_semantic(BOTH_ALLOW)
    # A lexical search the host fuses simply stays lexical when the network is not allowed.
    assert planner(semantic=managed, fuse_lexical=True).wants_semantic(LEXICAL) is False


def test_the_fused_profile_names_both_channels_and_changes_with_the_model() -> None:
    profile = planner(semantic=channel(managed=False)).fused_profile()
    assert [c.channel for c in profile.channels] == ["lexical", "semantic"]
    assert profile.profile == "hybrid-rrf"
    managed = planner(semantic=channel(managed=True)).fused_profile()
    assert managed.config_digest != profile.config_digest
    assert profile.config_digest != planner().lexical_profile.config_digest
