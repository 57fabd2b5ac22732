"""Calibration and power of ``ModelComparison``'s tests: simulated comparisons of two models on n queries.

Under the null the two models' scores of a query are drawn from one distribution (each query has 3
relevant items of 20, the models score them 0.5 higher on average, independently); under the alternative
the second model scores them higher still, by ``--shift`` at n = 50 and by shift * sqrt(50 / n) at n
queries (the same expected t statistic, so the power is comparable across n). For each test, the share of comparisons with
p <= 0.05 is its rejection rate: about 0.05 under the null (within [0.04, 0.06] at 2,000 simulations, the
goal of issue 36), and under the shift at least the t-test's. Each simulation draws its replicates with its
own seed and query ids.

Run: ``python benchmarks/study_comparison.py`` (2,000 simulations at n = 50 and 1,000; ``--quick``: 200 at
n = 50).
"""

from __future__ import annotations

import argparse

import torch

import torchrec_eval as tre

TESTS = ("student", "fisher", "bootstrap", "tukey")


def rejection_rates(queries: int, simulations: int, shift: float, replicates: int, seed: int) -> dict[str, float]:
    """test -> the share of ``simulations`` comparisons of ``queries`` queries with p <= 0.05."""
    gen = torch.Generator().manual_seed(seed)
    rejected = dict.fromkeys(TESTS, 0)
    target = torch.zeros(queries, 20, dtype=torch.long)
    target[:, :3] = 1
    for s in range(simulations):
        preds = [torch.randn(queries, 20, generator=gen) + (0.5 + extra) * target for extra in (0.0, shift)]
        ids = torch.arange(s * queries, (s + 1) * queries)
        for test in TESTS:
            compare = tre.ModelComparison(["ndcg@10"], models=["a", "b"], test=test, replicates=replicates, seed=s)
            compare.update(preds, target, query_ids=ids)
            rejected[test] += float(compare.compute()["ndcg@10/a_vs_b/p_value"]) <= 0.05
    return {test: count / simulations for test, count in rejected.items()}


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 simulations at n = 50")
    parser.add_argument("--shift", type=float, default=0.15, help="the alternative's extra score of relevant items")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    simulations, sizes = (200, (50,)) if args.quick else (2000, (50, 1000))
    lines = [f"{simulations} simulated comparisons per row, alpha = 0.05, R = 1000", "",
             "queries  setting          " + "  ".join(f"{test:>9}" for test in TESTS)]
    for queries in sizes:
        shifted = args.shift * (50 / queries) ** 0.5  # the same expected t at every n: power comparable across n
        for setting, shift in (("null", 0.0), (f"shift {shifted:.4f}", shifted)):
            rates = rejection_rates(queries, simulations, shift, 1000, seed=queries)
            lines.append(f"{queries:<8} {setting:<16} " + "  ".join(f"{rates[test]:9.3f}" for test in TESTS))
    report = "\n".join(lines)
    print(report)
    return report


if __name__ == "__main__":
    main()
