"""The semantic channel's query text (services/semantic.query_text, rule
``question-without-names/v1``): a question is embedded without the names in it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from engram_memory.domain.context import Scope
from engram_memory.local.moto_s3vectors import MotoS3VectorsIndex
from engram_memory.services.semantic import SemanticChannel, query_text
from moto import mock_aws

from tests.support.semantic import BUCKET, INDEX, MODEL_DIR, create_vector_index

SCOPE = Scope("tenant-a", "ws-main")


@pytest.mark.parametrize(("query", "embedded"), [
    ("When did Caroline go to the LGBTQ support group?",
     "When did go to the LGBTQ support group?"),
    ("What is Melanie's favourite book?", "What is favourite book?"),
    ("Did Jon and Gina meet in Paris?", "Did and meet in"),  # trailing "Paris?" is a name too
    ("How many times did I run?", "How many times did I run?"),  # "I" and acronyms stay
    ("Is BM25F better than TF-IDF?", "Is BM25F better than TF-IDF?"),
    # not a question: as it is (a claim names its subject: a disease, a gene)
    ("Alzheimer's disease is linked to APOE4.", "Alzheimer's disease is linked to APOE4."),
    ("Caroline?", "Caroline?"),  # nothing would be left
])
def test_a_question_is_embedded_without_its_names(query: str, embedded: str) -> None:
    assert query_text(query) == embedded


@pytest.fixture
def channel(monkeypatch: pytest.MonkeyPatch) -> Iterator[SemanticChannel]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        index = MotoS3VectorsIndex(create_vector_index(), BUCKET, INDEX)
        yield SemanticChannel(OnnxEmbedder(MODEL_DIR), index)


def turn(text: str) -> dict[str, object]:
    return {"primary_component_id": "c1",
            "components": [{"component_id": "c1", "kind": "context", "text": text}]}


def test_the_turn_that_answers_outranks_the_turn_that_names_the_person(
    channel: SemanticChannel,
) -> None:
    # Caroline's own turn never says "Caroline"; Melanie's reply does.
    channel.index_record(SCOPE, "mem_answer", turn(
        "I went to a LGBTQ support group yesterday and it was so powerful."))
    channel.index_record(SCOPE, "mem_reply", turn(
        "Wow, that's cool, Caroline! What happened that was so awesome?"))
    ranked = channel.with_tail(channel.nearest(SCOPE, "When did Caroline go to the support "
                                                      "group?"))
    assert [h.record_id for h in ranked] == ["mem_answer", "mem_reply"]

