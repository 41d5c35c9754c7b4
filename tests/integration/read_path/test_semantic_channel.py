"""The semantic channel through the search and projector handlers (moto + the real model).

Records are admitted through the write-path handlers, the projector handler embeds them
with the committed ONNX model into moto's S3 Vectors index, and search runs through the
search handler. Paraphrases that share no term with the record are the point.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.local.moto_s3vectors import MotoS3VectorsIndex

from bench.aws_calls import RoundTripRecorder, sequential_round_trips
from tests.integration.read_path.conftest import ReadPath, error_code, ids
from tests.support.semantic import MODEL_DIR, SEMANTIC_ENV, create_vector_index, stored_keys

BOTH = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}
BILLING = "Backoff policy for the billing service: exponential, capped at five attempts."
NEWSLETTER = "The marketing newsletter is sent every Monday morning."
PARAPHRASE = "what did we agree on for payment failures"


@pytest.fixture
def semantic(read_path: ReadPath) -> ReadPath:
    """The read path with the semantic channel configured and its index created."""
    create_vector_index()
    read_path.aws.configure(**SEMANTIC_ENV)
    read_path.rewire()
    return read_path


def admit_two(path: ReadPath) -> tuple[str, str]:
    billing = path.admit(BILLING, decision_text=BILLING)
    newsletter = path.admit(NEWSLETTER, decision_text=NEWSLETTER)
    path.project()
    return billing, newsletter


def test_a_paraphrase_is_found_by_meaning_and_the_receipt_names_both_channels(
    semantic: ReadPath,
) -> None:
    billing, newsletter = admit_two(semantic)
    assert ids(semantic.search(PARAPHRASE)) == []  # no shared term: lexical finds nothing
    envelope = semantic.search(PARAPHRASE, capability_policy=BOTH)
    assert ids(envelope) == [billing, newsletter]
    receipt = envelope["output"]["value"]["rank_receipt"]
    assert receipt["profile"] == "hybrid-convex"  # the deployed fusion (settings)
    channels = {c["channel"]: c for c in receipt["channels"]}
    assert channels["lexical"]["model"] == "bm25f-lexical"
    assert channels["semantic"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert channels["semantic"]["version"].startswith("sha256:")
    assert channels["semantic"]["index"].startswith("s3vectors:")


def test_forget_deletes_the_vector_and_search_never_returns_it(semantic: ReadPath) -> None:
    billing, newsletter = admit_two(semantic)
    client = create_vector_index()
    assert len(stored_keys(client)) == 2
    semantic.forget(billing)
    # Before the projector runs, revalidation already hides the forgotten record.
    assert ids(semantic.search(PARAPHRASE, capability_policy=BOTH)) == [newsletter]
    semantic.project()
    assert all(not key.endswith(billing) for key in stored_keys(client))
    assert ids(semantic.search(PARAPHRASE, capability_policy=BOTH)) == [newsletter]


@pytest.mark.parametrize("damage", ["truncated", "same-size garbage"])
def test_a_broken_model_is_ranking_unavailable_only_where_semantic_is_required(
    semantic: ReadPath, tmp_path: Path, damage: str,
) -> None:
    admit_two(semantic)
    broken = tmp_path / "model"
    shutil.copytree(MODEL_DIR, broken)
    data = (broken / "model.onnx").read_bytes()
    # Truncated: the size no longer matches the manifest. Same size: onnxruntime's parse fails.
    (broken / "model.onnx").write_bytes(data[: len(data) // 2] if damage == "truncated"
                                        else b"\xff" * len(data))
    semantic.aws.configure(ENGRAM_EMBEDDING_MODEL_DIR=str(broken))
    semantic.rewire()
    envelope = semantic.search(PARAPHRASE, capability_policy=BOTH)
    assert error_code(envelope) == "RANKING_UNAVAILABLE"
    assert envelope["error"]["retriable"] is True
    assert ids(semantic.search("billing backoff")) != []  # a lexical search still answers


def test_a_missing_vector_index_is_ranking_unavailable_and_lexical_still_answers(
    semantic: ReadPath,
) -> None:
    billing, _ = admit_two(semantic)
    semantic.aws.configure(ENGRAM_VECTOR_INDEX="no-such-index")
    semantic.rewire()
    assert error_code(semantic.search(PARAPHRASE, capability_policy=BOTH)) == \
        "RANKING_UNAVAILABLE"
    assert ids(semantic.search("billing backoff")) == [billing]


def test_host_enabled_fusion_fuses_lexical_searches_and_falls_back_when_broken(
    semantic: ReadPath,
) -> None:
    billing, newsletter = admit_two(semantic)
    semantic.aws.configure(ENGRAM_SEARCH_FUSE_LEXICAL="true")
    semantic.rewire()
    fused = semantic.search(PARAPHRASE)
    assert ids(fused) == [billing, newsletter]
    assert fused["output"]["value"]["rank_receipt"]["profile"] == "hybrid-convex"
    semantic.aws.configure(ENGRAM_VECTOR_INDEX="no-such-index")
    semantic.rewire()
    plain = semantic.search("billing backoff")
    assert ids(plain) == [billing]
    assert plain["output"]["value"]["rank_receipt"]["profile"] == "bm25f-lexical"


def test_without_a_semantic_channel_the_requirement_is_refused_not_retriable(
    read_path: ReadPath,
) -> None:
    read_path.admit(BILLING, decision_text=BILLING)
    read_path.project()
    envelope = read_path.search(PARAPHRASE, capability_policy=BOTH)
    assert error_code(envelope) == "CAPABILITY_UNAVAILABLE"
    assert envelope["error"]["retriable"] is False


def test_a_record_is_found_by_meaning_before_the_projector_runs(semantic: ReadPath) -> None:
    billing, newsletter = admit_two(semantic)
    fresh = semantic.admit("Declined card charges are retried three times, then refunded.",
                           decision_text="Declined card charges: three retries, then refund.")
    # No projection: the record is only in the journal tail, its vector not yet written.
    found = ids(semantic.search(PARAPHRASE, capability_policy=BOTH))
    assert fresh in found
    assert set(found) == {billing, newsletter, fresh}


def test_the_vector_read_runs_beside_the_lexical_reads(
    semantic: ReadPath, monkeypatch: pytest.MonkeyPatch,
) -> None:
    billing, _ = admit_two(semantic)
    semantic.search(BILLING, capability_policy=BOTH)  # warm: model loaded, threads exist
    spans: list[tuple[str, float, float]] = []
    query = MotoS3VectorsIndex.query

    def timed_query(self: MotoS3VectorsIndex, *args: Any) -> Any:
        # What QueryVectors costs on AWS: a network round trip (GIL released).
        start = time.perf_counter()
        time.sleep(0.2)
        try:
            return query(self, *args)
        finally:
            spans.append(("QueryVectors", start, time.perf_counter()))

    monkeypatch.setattr(MotoS3VectorsIndex, "query", timed_query)
    recorder = RoundTripRecorder(network_latency_s=0.2).attach([bootstrap.dynamodb_client()])
    try:
        with recorder.measure() as calls:
            found = ids(semantic.search("billing backoff policy", capability_policy=BOTH))
    finally:
        recorder.detach()
    assert found[0] == billing
    assert len(spans) == 1
    assert any(name == "Query" for name, _, _ in calls)
    # The vector read overlaps the lexical reads: it adds no round trip to the chain.
    assert sequential_round_trips(calls + spans) == sequential_round_trips(calls)


def test_the_projector_embeds_a_stream_batch_in_one_model_call(
    semantic: ReadPath, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A spy on the real embedder: every call's texts are counted, then embedded as usual.
    from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder

    calls: list[int] = []
    real_embed = OnnxEmbedder.embed

    def counted(self: OnnxEmbedder, texts: Any) -> Any:
        calls.append(len(texts))
        return real_embed(self, texts)

    monkeypatch.setattr(OnnxEmbedder, "embed", counted)
    texts = [BILLING, NEWSLETTER, "Release notes are drafted by the on-call engineer."]
    admitted = [semantic.admit(text, decision_text=text) for text in texts]
    semantic.project()
    assert max(calls) == len(texts)  # one call for the batch, not one per record
    assert sum(calls) == len(texts)  # and no record embedded twice
    assert ids(semantic.search(PARAPHRASE, capability_policy=BOTH))[0] == admitted[0]
