"""Composition of the semantic channel from the settings (used by bootstrap only).

Kept apart from bootstrap so a deployment without the channel never imports its adapters
(numpy, onnxruntime and tokenizers are loaded only when the channel is configured).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from engram_memory.domain.fusion import FusionConfig
from engram_memory.services.channels import ChannelSettings
from engram_memory.services.semantic import SemanticChannel
from engram_memory.settings import Settings

EMBEDDERS = ("onnx", "bedrock-titan-v2")
MODEL_NAME = "all-minilm-l6-v2"
LAYER_MODELS = Path("/opt/engram-models")  # where the Lambda layer puts models/
REPO_MODELS = Path(__file__).resolve().parents[2] / "models"


def model_dir(settings: Settings) -> Path:
    """The ONNX model folder: the setting, else the layer's copy, else the repository's."""
    if settings.embedding_model_dir:
        return Path(settings.embedding_model_dir)
    layer = LAYER_MODELS / MODEL_NAME
    return layer if layer.is_dir() else REPO_MODELS / MODEL_NAME


@cache
def _onnx(folder: Path) -> Any:
    # One loaded model per folder and process: re-wiring (tests, a restarted local
    # service) must not reload and re-hash it.
    from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder(folder)


def embedder(settings: Settings, client: Any = None) -> Any:
    """The configured embedder (``client`` makes boto3 clients; only Bedrock needs one)."""
    if settings.semantic_embedder in ("onnx", ""):
        return _onnx(model_dir(settings))
    from engram_memory.adapters.embedding.bedrock_titan import TitanV2Embedder
    return TitanV2Embedder(client("bedrock-runtime"), settings.titan_dimension)


class LocalIndexMissing(RuntimeError):
    """``ENGRAM_VECTOR_INDEX_LOCAL`` is set but no local composition provided the index."""


def _index(settings: Settings, client: Any, local_index: Any) -> Any:
    if settings.vector_index_local:
        # Local mode's composition provides it (engram_memory.local.adapters); deployed
        # code never imports local mode.
        if local_index is None:
            raise LocalIndexMissing("ENGRAM_VECTOR_INDEX_LOCAL without a local vector index")
        return local_index(client("s3vectors"), settings)
    from engram_memory.adapters.vectors.s3_vectors import S3VectorsIndex
    return S3VectorsIndex(client("s3vectors"), settings.vector_bucket, settings.vector_index)


def semantic_channel(settings: Settings, client: Any,
                     local_index: Any = None) -> SemanticChannel | None:
    """The configured channel, or None (no embedder, or no vector index configured).

    ``local_index(s3vectors_client, settings)`` builds the index in local mode.
    """
    if settings.semantic_embedder not in EMBEDDERS:
        return None
    if not settings.vector_bucket or not settings.vector_index:
        return None
    return SemanticChannel(embedder(settings, client), _index(settings, client, local_index))


def fusion_config(rule: str, lexical_weight: float) -> FusionConfig:
    """The fusion the settings name. ``convex``: lexical_weight·lexical + (1 −
    lexical_weight)·semantic over min-max normalized scores (lexical_weight in [0, 1));
    ``rrf``: lexical_weight against a semantic weight of 1."""
    if rule == "convex":
        return FusionConfig(rule=rule, lexical_weight=lexical_weight,
                            semantic_weight=round(1.0 - lexical_weight, 9))
    return FusionConfig(rule=rule, lexical_weight=lexical_weight)


def channel_settings(settings: Settings, channel: SemanticChannel | None) -> ChannelSettings:
    """The semantic channel with the host's fusion settings."""
    fusion = fusion_config(settings.search_fusion, settings.search_fusion_lexical_weight)
    return ChannelSettings(semantic=channel, fusion=fusion,
                           fuse_lexical=settings.search_fuse_lexical,
                           host_allows_network=settings.host_allows_network)
