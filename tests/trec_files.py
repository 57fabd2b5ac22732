"""TREC run and qrels files for the tests, with the pytrec_eval dicts of the same data."""

from __future__ import annotations

import random
from pathlib import Path


def make_trec(folder: Path, seed: int = 0, num_queries: int = 40, *, deep: bool = False,
              every_judged_query_retrieves: bool = False) -> tuple[Path, Path, dict, dict]:
    """Write a run and a qrels file; return their paths and the pytrec_eval dicts of the same data.

    ``deep``: longer lists and qrels, grades up to 4, and one document id in three longer than 16
    bytes; ``every_judged_query_retrieves``: no judged query is missing from the run."""
    rng = random.Random(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    run_lines, qrels_lines = [], []
    for q in range(num_queries):
        qid = f"q{q}"
        pool = rng.sample(range(1, 500), 150) if deep else rng.sample(range(1, 400), 80)
        docs = [f"d{n}" if n % 3 or not deep else f"clueweb09-en{n:04d}-{n % 7:02d}-{n:05d}" for n in pool]
        depth = rng.choice([1, 3, 7, 15, 30, 60, 120] if deep else [1, 3, 7, 15, 30, 60])
        in_run = every_judged_query_retrieves or q % 9 != 4  # some queries only in the run, some only in the qrels
        in_qrels = q % 7 != 3
        if in_run:
            coarse = rng.random() < 0.7  # mostly a few distinct scores: many ties, also at the cut-offs
            run[qid] = {}
            for rank, doc in enumerate(docs[:depth], start=1):
                score = rng.choice([0.1, 0.25, 0.5, 1.0, 2.0]) if coarse else round(rng.uniform(-5, 5), 3)
                run[qid][doc] = score
                run_lines.append(f"{qid} Q0 {doc} {rank} {score} tag{seed}")
        if in_qrels:
            qrels[qid] = {}
            no_relevant = q % 11 == 5  # judged, nothing relevant
            judged = rng.sample(docs[:80], rng.randint(1, 40)) if deep else rng.sample(docs[:50], rng.randint(1, 25))
            grades = [-1, 0, 0, 1, 1, 2, 3, 4] if deep else [-1, 0, 0, 1, 1, 2, 3]
            rels = [0 if no_relevant else rng.choice(grades) for _ in judged]
            if max(rels) < 0:  # only negative judgements: trec_eval reads uninitialised memory (may hang)
                rels[0] = 0
            for doc, rel in zip(judged, rels, strict=True):
                qrels[qid][doc] = rel
                qrels_lines.append(f"{qid} 0 {doc} {rel}")
    rng.shuffle(run_lines)  # the file's order and rank column do not matter
    run_path, qrels_path = folder / "run.trec", folder / "qrels.trec"
    run_path.write_text("\n".join(run_lines) + "\n")
    qrels_path.write_text("\n".join(qrels_lines) + "\n")
    return run_path, qrels_path, run, qrels
