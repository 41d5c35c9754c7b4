"""Fusion of the lexical and semantic orders (domain/fusion.py)."""

from __future__ import annotations

import pytest
from engram_memory.domain.fusion import ChannelReceipt, FusionConfig, fuse, fused_config_digest
from engram_memory.domain.ranking import ScoredRecord
from hypothesis import given
from hypothesis import strategies as st


def ranked(*ids: str) -> list[ScoredRecord]:
    return [ScoredRecord(rid, float(len(ids) - i)) for i, rid in enumerate(ids)]


def test_rrf_adds_reciprocal_ranks_of_each_channel() -> None:
    fused = fuse(ranked("a", "b"), ranked("b", "c"), FusionConfig(rrf_k=60))
    assert [h.record_id for h in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(round(1 / 62 + 1 / 61, 9))
    assert fused[1].score == pytest.approx(round(1 / 61, 9))


def test_equal_fused_scores_are_ordered_by_record_id() -> None:
    # a is first lexically, z first semantically: the same fused score, so id order.
    fused = fuse(ranked("z", "a"), ranked("a", "z"), FusionConfig())
    assert [h.record_id for h in fused] == ["a", "z"]
    assert fused[0].score == fused[1].score


def test_a_zero_lexical_weight_ranks_by_meaning_alone() -> None:
    config = FusionConfig(lexical_weight=0.0)
    assert [h.record_id for h in fuse(ranked("a"), ranked("c", "b"), config)] == ["c", "b"]
    assert config.profile == "semantic-only"


def test_convex_normalizes_each_channel_before_weighting() -> None:
    lexical = [ScoredRecord("a", 30.0), ScoredRecord("b", 10.0)]
    semantic = [ScoredRecord("b", 0.9), ScoredRecord("a", 0.5)]
    fused = fuse(lexical, semantic, FusionConfig(rule="convex", lexical_weight=1.0))
    assert [(h.record_id, h.score) for h in fused] == [("a", 1.0), ("b", 1.0)]


def test_the_config_digest_changes_with_every_parameter_and_channel() -> None:
    channel = ChannelReceipt("semantic", "m", "sha256:" + "1" * 64, "idx", "sha256:" + "2" * 64)
    other = ChannelReceipt("semantic", "m", "sha256:" + "3" * 64, "idx", "sha256:" + "2" * 64)
    digests = {
        fused_config_digest(FusionConfig(), (channel,)),
        fused_config_digest(FusionConfig(rrf_k=10), (channel,)),
        fused_config_digest(FusionConfig(rule="convex"), (channel,)),
        fused_config_digest(FusionConfig(), (other,)),
    }
    assert len(digests) == 4


def test_invalid_configurations_are_refused() -> None:
    with pytest.raises(ValueError, match="rule"):
        FusionConfig(rule="max")
    with pytest.raises(ValueError, match="range"):
        FusionConfig(semantic_top_k=101)
    with pytest.raises(ValueError, match="weights"):
        FusionConfig(semantic_weight=0.0)


ids = st.lists(st.sampled_from([f"mem_{c}" for c in "abcdefgh"]), unique=True, max_size=8)


@given(ids, ids)
def test_fusion_is_deterministic_and_covers_exactly_both_channels(left: list[str],
                                                                   right: list[str]) -> None:
    first = fuse(ranked(*left), ranked(*right), FusionConfig())
    again = fuse(list(ranked(*left)), list(ranked(*right)), FusionConfig())
    assert first == again
    assert {h.record_id for h in first} == set(left) | set(right)
    keys = [(-h.score, h.record_id) for h in first]
    assert keys == sorted(keys)


def test_the_deployed_fusion_is_the_convex_combination_named_in_the_digest() -> None:
    from engram_memory.semantic_wiring import fusion_config
    from engram_memory.settings import Settings

    settings = Settings.from_env({"ENGRAM_TENANT_ID": "t", "ENGRAM_TABLE_NAME": "m",
                                  "ENGRAM_KEY_TABLE_NAME": "k",
                                  "ENGRAM_PROJECTION_TABLE_NAME": "p"})
    deployed = fusion_config(settings.search_fusion, settings.search_fusion_lexical_weight)
    assert (deployed.rule, deployed.lexical_weight, deployed.semantic_weight) == (
        "convex", 0.5, 0.5)
    assert deployed.profile == "hybrid-convex"
    assert deployed.as_dict()["normalization"] == "min-max per query"
    channel = ChannelReceipt("semantic", "m", "sha256:" + "1" * 64, "idx", "sha256:" + "2" * 64)
    assert fused_config_digest(deployed, (channel,)) != fused_config_digest(
        fusion_config("convex", 0.85), (channel,))
    # lexical weight 0 is the semantic channel alone (the measuring setting)
    assert fusion_config("convex", 0.0).profile == "semantic-only"


def test_the_convex_combination_weighs_normalized_scores() -> None:
    lexical = [ScoredRecord("a", 12.0), ScoredRecord("b", 8.0), ScoredRecord("c", 2.0)]
    semantic = [ScoredRecord("c", 0.9), ScoredRecord("b", 0.6), ScoredRecord("a", 0.3)]
    fused = fuse(lexical, semantic, FusionConfig(rule="convex", lexical_weight=0.85,
                                                 semantic_weight=0.15))
    # a: 0.85·1 + 0 ; b: 0.85·0.6 + 0.15·0.5 ; c: 0 + 0.15·1
    assert [(h.record_id, h.score) for h in fused] == [
        ("a", 0.85), ("b", pytest.approx(0.585)), ("c", 0.15)]


def test_z_score_normalization_centres_each_channel_and_gives_the_absent_its_lowest_z(
        ) -> None:
    # lexical 6, 4, 2: mean 4, σ = sqrt(8/3) = 1.632993; z = +1.224745, 0, −1.224745
    # semantic 0.9, 0.5 (a absent): mean 0.7, σ 0.2; z(c) = +1, z(b) = −1, absent a → −1
    lexical = [ScoredRecord("a", 6.0), ScoredRecord("b", 4.0), ScoredRecord("c", 2.0)]
    semantic = [ScoredRecord("c", 0.9), ScoredRecord("b", 0.5)]
    fused = fuse(lexical, semantic, FusionConfig(rule="convex", lexical_weight=0.5,
                                                 semantic_weight=0.5,
                                                 normalization="z-score"))
    # a: 0.5·1.224745 + 0.5·(−1) = 0.112372; b: 0 + 0.5·(−1) = −0.5;
    # c: 0.5·(−1.224745) + 0.5·1 = −0.112372
    assert [(h.record_id, h.score) for h in fused] == [
        ("a", pytest.approx(0.112372, abs=1e-6)), ("c", pytest.approx(-0.112372, abs=1e-6)),
        ("b", -0.5)]


def test_max_normalization_divides_by_the_channels_best_score() -> None:
    lexical = [ScoredRecord("a", 8.0), ScoredRecord("b", 2.0)]
    semantic = [ScoredRecord("b", 0.8), ScoredRecord("c", 0.4)]
    fused = fuse(lexical, semantic, FusionConfig(rule="convex", lexical_weight=0.75,
                                                 semantic_weight=0.25, normalization="max"))
    # a: 0.75·1 = 0.75; b: 0.75·0.25 + 0.25·1 = 0.4375; c: 0.25·0.5 = 0.125
    assert [(h.record_id, h.score) for h in fused] == [("a", 0.75), ("b", 0.4375), ("c", 0.125)]


def test_the_normalization_is_named_in_the_config_digest() -> None:
    minmax = FusionConfig(rule="convex", lexical_weight=0.75, semantic_weight=0.25)
    z = FusionConfig(rule="convex", lexical_weight=0.75, semantic_weight=0.25,
                     normalization="z-score")
    assert z.as_dict()["normalization"] == "z-score per query"
    assert fused_config_digest(minmax, ()) != fused_config_digest(z, ())
    with pytest.raises(ValueError, match="normalization"):
        FusionConfig(rule="convex", normalization="softmax")
