"""Write a BEIR-layout folder that bench/retrieval_eval.py reads, from LoCoMo or Cranfield.

Run:
  .venv/bin/python bench/beir_convert.py locomo SRC OUT [--conversations conv-26 ...]
      [--turns N]
  .venv/bin/python bench/beir_convert.py cranfield SRC OUT [--docs N]

``locomo``: SRC is either LoCoMo's own ``locomo10.json`` (snap-research/LoCoMo) or a
folder already in this layout (``../shared/data/locomo-dev``). One document per dialogue
turn: ``_id`` = ``<conversation>:<dia_id>``, ``title`` empty, ``text`` = the turn (a shared
image's caption appended as `` [image: ...]``), and ``conversation``, ``session``,
``session_date``, ``speaker`` as extra fields; one query per question (``_id`` =
``<conversation>:q<n>``, ``conversation``, ``category``); one judgement per evidence
turn (score 1). Use ``--scope-field conversation``: each conversation is a workspace.
``--conversations`` keeps only those, ``--turns N`` the first N turns of each (and the
questions whose evidence is among them: a quick subset).

``cranfield``: SRC is the converted folder (``../shared/data/cranfield``: ``title``,
``text`` per abstract, graded qrels 1-4). ``--docs N`` keeps the first N documents and
the queries judged on them (a quick subset).

Both check what they write: every judgement names a written document and query.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

Rows = list[dict[str, Any]]


def write_beir(out: Path, corpus: Rows, queries: Rows,
               qrels: Iterable[tuple[str, str, int]]) -> tuple[int, int, int]:
    """corpus.jsonl, queries.jsonl, qrels.tsv (header row); the three counts."""
    docs = {str(d["_id"]) for d in corpus}
    judged = [(q, d, s) for q, d, s in qrels if d in docs]
    qids = {q for q, _, _ in judged}
    queries = [q for q in queries if str(q["_id"]) in qids]
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        with (out / name).open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    with (out / "qrels.tsv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(["query-id", "corpus-id", "score"])
        writer.writerows(judged)
    return len(corpus), len(queries), len(judged)


def _read_beir(folder: Path) -> tuple[Rows, Rows, list[tuple[str, str, int]]]:
    def jsonl(name: str) -> Rows:
        with (folder / name).open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    with (folder / "qrels.tsv").open(encoding="utf-8") as fh:
        qrels = [(r["query-id"], r["corpus-id"], int(r["score"]))
                 for r in csv.DictReader(fh, delimiter="\t")]
    return jsonl("corpus.jsonl"), jsonl("queries.jsonl"), qrels


def _turn_text(turn: Mapping[str, Any]) -> str:
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    return f"{text} [image: {caption}]" if caption else text


def locomo_from_json(samples: Sequence[Mapping[str, Any]]
                     ) -> tuple[Rows, Rows, list[tuple[str, str, int]]]:
    """LoCoMo's locomo10.json → (corpus, queries, qrels) in this layout."""
    corpus: Rows = []
    queries: Rows = []
    qrels: list[tuple[str, str, int]] = []
    for sample in samples:
        conv = str(sample["sample_id"])
        dialogue = sample["conversation"]
        sessions = sorted((int(m.group(1)), key) for key in dialogue
                          if (m := re.fullmatch(r"session_(\d+)", key)))
        for _, key in sessions:
            for turn in dialogue[key] or ():
                corpus.append({"_id": f"{conv}:{turn['dia_id']}", "title": "",
                               "text": _turn_text(turn), "conversation": conv,
                               "session": key,
                               "session_date": str(dialogue.get(f"{key}_date_time", "")),
                               "speaker": str(turn.get("speaker", ""))})
        for n, qa in enumerate(sample.get("qa", ())):
            qid = f"{conv}:q{n}"
            queries.append({"_id": qid, "conversation": conv,
                            "category": qa.get("category"), "text": str(qa["question"])})
            for evidence in dict.fromkeys(qa.get("evidence", ())):
                qrels.append((qid, f"{conv}:{evidence}", 1))
    return corpus, queries, qrels


def convert_locomo(src: Path, out: Path, conversations: Sequence[str] = (),
                   turns: int | None = None) -> tuple[int, ...]:
    """LoCoMo (its JSON file, or a folder in this layout) → ``out``."""
    if src.is_dir():
        corpus, queries, qrels = _read_beir(src)
    else:
        corpus, queries, qrels = locomo_from_json(json.loads(src.read_text(encoding="utf-8")))
    if conversations:
        keep = set(conversations)
        corpus = [d for d in corpus if d.get("conversation") in keep]
        queries = [q for q in queries if q.get("conversation") in keep]
    if turns:
        seen: dict[str, int] = {}
        kept: Rows = []
        for doc in corpus:
            conv = str(doc.get("conversation"))
            seen[conv] = seen.get(conv, 0) + 1
            if seen[conv] <= turns:
                kept.append(doc)
        corpus = kept
    return write_beir(out, corpus, queries, qrels)


def convert_cranfield(src: Path, out: Path, docs: int | None = None) -> tuple[int, ...]:
    """Cranfield's converted folder (title, abstract, graded qrels) → ``out``."""
    corpus, queries, qrels = _read_beir(src)
    corpus = [{"_id": d["_id"], "title": d.get("title", ""), "text": d.get("text", "")}
              for d in (corpus[:docs] if docs else corpus)]
    return write_beir(out, corpus, queries, [r for r in qrels if r[2] > 0])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="set", required=True)
    locomo = sub.add_parser("locomo")
    locomo.add_argument("src", type=Path)
    locomo.add_argument("out", type=Path)
    locomo.add_argument("--conversations", nargs="*", default=[])
    locomo.add_argument("--turns", type=int, default=None)
    cranfield = sub.add_parser("cranfield")
    cranfield.add_argument("src", type=Path)
    cranfield.add_argument("out", type=Path)
    cranfield.add_argument("--docs", type=int, default=None)
    options = parser.parse_args(argv)
    if options.set == "locomo":
        counts = convert_locomo(options.src, options.out, options.conversations,
                                options.turns)
    else:
        counts = convert_cranfield(options.src, options.out, options.docs)
    print(f"{options.out}: {counts[0]} documents, {counts[1]} queries, {counts[2]} judgements")


if __name__ == "__main__":
    main()
