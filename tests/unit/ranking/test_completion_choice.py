"""Completion picks its candidates exactly as the ranking orders them, without ordering all."""

from __future__ import annotations

from engram_memory.domain.completion import to_complete
from engram_memory.domain.ranking import order
from hypothesis import given
from hypothesis import strategies as st

# Few distinct scores, so ties (broken by record id) are common; scores that differ only
# past the ninth decimal tie too, as the ranking rounds them.
scores = st.dictionaries(
    st.text(alphabet="abcdef", min_size=1, max_size=4),
    st.sampled_from([0.5, 1.25, 1.2500000000001, 3.0, 7.75]),
    max_size=60,
)


@given(scores, st.integers(min_value=0, max_value=70))
def test_the_candidates_completed_are_the_rankings_first_cap(
        partial: dict[str, float], cap: int) -> None:
    assert to_complete(partial, cap) == [hit.record_id for hit in order(partial)[:cap]]
