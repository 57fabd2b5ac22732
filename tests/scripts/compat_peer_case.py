"""Compat on ir-measures' own test case (``tests/compat.qrels`` and ``tests/compat.run`` of its repository, whose
expected values come from Clarke's implementation, github.com/claclark/Compatibility), outside the suite: the files
are ir-measures', not ours.

Run: ``python tests/scripts/compat_peer_case.py /path/to/ir_measures/tests``; prints each query's value beside
ir-measures' expected one and exits 1 on a difference above 1e-9 (its own tolerance).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from torchrec_eval.functional import compat

# ir-measures' tests/test_compat.py: (p, {query: value})
EXPECTED = {0.95: {"31_1": 0.51779512165509, "31_2": 0.018400100569017922},
            0.9: {"31_1": 0.3761334522946854, "31_2": 0.004344079941789211},
            0.8: {"31_1": 0.16723008845234535, "31_2": 0.00022806427320561776}}


def main(folder: Path) -> int:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[tuple[float, str]]] = {}
    for line in (folder / "compat.qrels").read_text().splitlines():
        query, _, doc, grade = line.split()
        qrels.setdefault(query, {})[doc] = int(grade)
    for line in (folder / "compat.run").read_text().splitlines():
        query, _, doc, _, score, _ = line.split()
        run.setdefault(query, []).append((float(score), doc))
    ids: dict[str, int] = {}
    queries = sorted(qrels)
    length, judged = max(len(run[q]) for q in queries), max(len(qrels[q]) for q in queries)
    ranked = torch.full((len(queries), length), -1)
    target_ids, target_gains = torch.full((len(queries), judged), -1), torch.zeros(len(queries), judged)
    for b, query in enumerate(queries):
        for j, (_, doc) in enumerate(sorted(run[query], key=lambda pair: -pair[0])):
            ranked[b, j] = ids.setdefault(doc, len(ids))
        for j, (doc, grade) in enumerate(qrels[query].items()):
            target_ids[b, j], target_gains[b, j] = ids.setdefault(doc, len(ids)), grade
    worst = 0.0
    for p, expected in EXPECTED.items():
        values = compat(ranked_ids=ranked, target_ids=target_ids, target_gains=target_gains, k=length, p=p,
                        reduction="none")
        for query, value in zip(queries, values.tolist(), strict=True):
            worst = max(worst, abs(value - expected[query]))
            print(f"p={p} {query}: {value:.15f} (ir-measures, from Clarke's code: {expected[query]:.15f})")
    print(f"largest difference: {worst:.1e}")
    return 0 if worst <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
