"""The local QueryVectors stand-in is exactly a brute-force cosine top-k."""

from __future__ import annotations

import math

from engram_memory.adapters.vectors.exact_top_k import exact_top_k
from hypothesis import given, settings
from hypothesis import strategies as st

DIM = 6
coordinate = st.integers(min_value=-3, max_value=3).map(float)  # small ints: many exact ties
vector = st.lists(coordinate, min_size=DIM, max_size=DIM).filter(lambda v: any(v))


def brute_force(query: list[float], keys: list[str], vectors: list[list[float]],
                k: int) -> list[tuple[str, float]]:
    def cosine(v: list[float]) -> float:
        dot = sum(a * b for a, b in zip(query, v, strict=True))
        return round(dot / (math.sqrt(sum(a * a for a in query)) *
                            math.sqrt(sum(b * b for b in v))), 9)

    scored = sorted(((cosine(v), key) for key, v in zip(keys, vectors, strict=True)),
                    key=lambda p: (-p[0], p[1]))
    return [(key, sim) for sim, key in scored[:k]]


@settings(max_examples=200)
@given(vector, st.lists(vector, max_size=30), st.integers(min_value=1, max_value=40))
def test_exact_top_k_equals_brute_force(query: list[float], vectors: list[list[float]],
                                        k: int) -> None:
    keys = [f"t#w#mem_{i:03d}" for i in range(len(vectors))][::-1]
    got = exact_top_k(query, keys, vectors, k)
    expected = brute_force(query, keys, vectors, k)
    assert [key for key, _ in got] == [key for key, _ in expected]
    for (_, a), (_, b) in zip(got, expected, strict=True):
        assert abs(a - b) < 1e-9


def test_no_vectors_or_no_k_is_empty() -> None:
    assert exact_top_k([1.0, 0.0], [], [], 5) == []
    assert exact_top_k([1.0, 0.0], ["a"], [[1.0, 0.0]], 0) == []
