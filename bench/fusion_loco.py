"""Fusion candidates chosen leave-one-conversation-out (issue 23's conversational target).

Run: ``.venv/bin/python bench/fusion_loco.py [--locomo DIR] [--cranfield DIR]`` (the sets
under ``../shared/data`` by default; ~8 CPU-minutes here, most of it embedding). Both
channels are computed once per set as bench/retrieval_eval.py ``--path in-process``
computes them; each candidate fuses them with domain/fusion.py. For each conversation of
the LoCoMo set, the candidate is chosen on the other conversations (largest Recall@10
gain over lexical among the candidates at least lexical at nDCG@10 and Recall@10 there)
and judged on the held-out one; the held-out numbers are pooled over queries. Cranfield is
split by query id as in bench/fusion_choice.py (odd = dev, even = held out). Printed:
every candidate per conversation and per Cranfield half, each fold's pick, the pooled
held-out result beside lexical and the deployed rule, and the min-max weight the same
criterion picks on all conversations (among those at least lexical on Cranfield's dev half:
how the deployed weight is chosen).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

from engram_memory.domain.fusion import DEPLOYED_LEXICAL_WEIGHT, NORMALIZATIONS, FusionConfig
from fusion_choice import DATA, SetRuns
from harness import table
from retrieval_eval import load_beir, measures

ALPHAS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
MEASURES = ("ndcg@10", "recall@10", "recall@100")


def convex(alpha: float, normalization: str = "min-max", top_k: int = 100) -> FusionConfig:
    """α·lexical + (1 − α)·semantic under one normalization, semantic top-k neighbours."""
    return FusionConfig(rule="convex", lexical_weight=alpha,
                        semantic_weight=round(1 - alpha, 9), normalization=normalization,
                        semantic_top_k=top_k)


CANDIDATES = {
    **{f"{n} α={a}": convex(a, n) for n in NORMALIZATIONS for a in ALPHAS},
    **{f"min-max α={a} top-{k}": convex(a, "min-max", k) for k in (20, 50)
       for a in (0.7, 0.75, 0.8)},
}
DEPLOYED = f"min-max α={DEPLOYED_LEXICAL_WEIGHT}"


def conversation(qid: str) -> str:
    """``conv-26`` of ``conv-26:q3``."""
    return re.sub(r":[^:]*$", "", qid)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo-dev")
    parser.add_argument("--cranfield", type=Path, default=DATA / "cranfield")
    options = parser.parse_args(argv)
    locomo = SetRuns("locomo", load_beir(options.locomo), "conversation")
    cranfield = SetRuns("cranfield", load_beir(options.cranfield), None)
    qids = locomo.halves["all"]
    folds = {c: [q for q in qids if conversation(q) == c]
             for c in sorted({conversation(q) for q in qids})}
    runs = {"lexical": locomo.ranked(None, "lexical"),
            **{name: locomo.ranked(config) for name, config in CANDIDATES.items()}}

    def score(name: str, ids: list[str]) -> dict[str, float]:
        return measures(runs[name], locomo.qrels, ids)

    cran = {"lexical": cranfield.scores(cranfield.ranked(None, "lexical")),
            **{n: cranfield.scores(cranfield.ranked(c)) for n, c in CANDIDATES.items()}}
    picked: dict[str, list[str]] = {}
    rows = []
    for held, held_ids in folds.items():
        train = [q for c, ids in folds.items() if c != held for q in ids]
        base = score("lexical", train)
        trained = {n: score(n, train) for n in CANDIDATES}
        safe = [n for n, m in trained.items()
                if m["ndcg@10"] >= base["ndcg@10"] and m["recall@10"] >= base["recall@10"]]
        pick = max(safe or list(CANDIDATES),
                   key=lambda n: (trained[n]["recall@10"], trained[n]["ndcg@10"]))
        picked[pick] = picked.get(pick, []) + held_ids
        rows.append([held, str(len(held_ids)), pick, *(
            f"{score(n, held_ids)[m]:.4f}" for n in ("lexical", pick) for m in MEASURES)])
    print(table(["held out", "queries", "picked on the other 4", "lexical nDCG@10", "R@10",
                 "R@100", "picked nDCG@10", "R@10", "R@100"], rows))
    held_run = {q: runs[name][q] for name, ids in picked.items() for q in ids}
    pooled = {"lexical": score("lexical", qids),
              "LOCO picks (held out)": measures(held_run, locomo.qrels, qids),
              f"deployed ({DEPLOYED})": score(DEPLOYED, qids)}
    print("\nLoCoMo, pooled over the held-out conversations:")
    print(table(["ranking", *MEASURES], [[n, *(f"{m[k]:.4f}" for k in MEASURES)]
                                         for n, m in pooled.items()]))
    lexical_all, cran_lexical = score("lexical", qids), cran["lexical"]["dev"]
    deployable = [n for n in CANDIDATES if n.startswith("min-max α") and "top" not in n
                  and score(n, qids)["ndcg@10"] >= lexical_all["ndcg@10"]
                  and cran[n]["dev"]["ndcg@10"] >= cran_lexical["ndcg@10"]
                  and cran[n]["dev"]["recall@10"] >= cran_lexical["recall@10"]]
    weight = max(deployable, key=lambda n: (score(n, qids)["recall@10"],
                                            score(n, qids)["ndcg@10"]), default="none")
    print(f"\nthe deployed weight (min-max, chosen on all conversations and Cranfield's dev "
          f"half): {weight}")
    print("\nEvery candidate, per conversation (nDCG@10 / R@10) and Cranfield halves:")
    print(table(["ranking", *folds, "locomo all", "cranfield dev", "cranfield held-out"],
                [[n, *(f"{score(n, ids)['ndcg@10']:.4f} / {score(n, ids)['recall@10']:.4f}"
                       for ids in (*folds.values(), qids)),
                  *(f"{cran[n][h]['ndcg@10']:.4f} / {cran[n][h]['recall@10']:.4f}"
                    for h in ("dev", "held-out"))]
                 for n in runs]))



if __name__ == "__main__":
    main()
