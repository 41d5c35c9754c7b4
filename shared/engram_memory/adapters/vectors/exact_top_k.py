"""Exact cosine top-k over a set of unit vectors (the local stand-in for QueryVectors).

Order: similarity (rounded to 9 decimals) descending, then key ascending, so equal
similarities always come back in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SIMILARITY_DECIMALS = 9


def exact_top_k(query: Sequence[float], keys: Sequence[str],
                vectors: Sequence[Sequence[float]], k: int) -> list[tuple[str, float]]:
    """The ``k`` keys whose vectors have the highest cosine with ``query``."""
    if not keys or k <= 0:
        return []
    matrix = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
    sims = np.round(matrix @ q / np.clip(norms, 1e-12, None), SIMILARITY_DECIMALS)
    # Take a generous slice by similarity first, then order it exactly with the key tie-break.
    cut = min(len(keys), k)
    if cut < len(keys):
        threshold = np.partition(sims, len(keys) - cut)[len(keys) - cut]
        chosen = np.flatnonzero(sims >= threshold)
    else:
        chosen = np.arange(len(keys))
    ranked = sorted(((float(sims[i]), keys[int(i)]) for i in chosen), key=lambda p: (-p[0], p[1]))
    return [(key, sim) for sim, key in ranked[:k]]
