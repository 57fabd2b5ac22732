"""The library's metrics of a command line, as one RankingMetrics under the names the user typed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torchrec_eval.cli.errors import CliError
from torchrec_eval.cli.names import metric_family, trec_only

if TYPE_CHECKING:
    from torch import Tensor

_NO_BARE_CUTOFF = ("precision", "f1")  # their value depends on k itself: a bare name would be meaningless


class Suite:
    """The requested metrics, as one RankingMetrics, under their names as the user typed them.

    A name without a cut-off (``mrr``, ``map``, ``ndcg``, ``recall``, ``rprecision``) means the whole
    list: it is evaluated at ``full_depth`` (the longest list, or more relevant documents than that),
    like trec_eval's ``recip_rank``, ``map`` and ``ndcg``.
    """

    def __init__(self, names: Sequence[str], full_depth: int, convention: str | None) -> None:
        from torchrec_eval.suites.ranking import RankingMetrics

        self.names = list(names)
        self.internal: dict[str, str] = {}
        families: dict[str, str] = {}
        for name in self.names:
            family, cutoff = metric_family(name)
            if trec_only(name):
                raise CliError(f"{name!r} is one of trec_eval's measures: it needs --convention trec and a TREC "
                               f"run file (this library's names: ndcg@10, map@100, recall@20, mrr, ...)")
            if not cutoff and family in _NO_BARE_CUTOFF:
                raise CliError(f"metric {name!r} needs a cut-off, as in '{family}@10'")
            internal = f"{family}@{cutoff}" if cutoff or family == "rprecision" else f"{family}@{full_depth}"
            if family == "rprecision" and not cutoff:
                internal = "rprecision"
            self.internal[name] = internal
            families[name] = family
        self.kwargs: dict[str, Any] = {"convention": convention}
        self.families = families
        self.bare = any(not metric_family(name)[1] for name in self.names)
        if len(set(self.names)) != len(self.names):
            raise CliError(f"a metric is requested twice: {self.names}")
        try:  # two names may be one value (map and map@1000 on lists of 1,000): evaluated once
            self.metrics = RankingMetrics(list(dict.fromkeys(self.internal.values())), **self.kwargs)
        except ValueError as error:
            raise CliError(self._unknown(convention) or str(error)) from None

    def _unknown(self, convention: str | None) -> str | None:
        """The error for the first name that is no metric, as the user typed it."""
        from torchrec_eval.suites.ranking import RankingMetrics

        for name in self.names:
            try:
                RankingMetrics([self.internal[name]], **self.kwargs)
            except ValueError:
                trec = (" nor a trec_eval measure (P.5,10, ndcg_cut.10, map, bpref, official, all_trec, ...)"
                        if convention == "trec" else "")
                return f"Unknown metric {name!r}: not one of this library's metrics (ndcg@10, map@100, ...){trec}"
        return None

    def update(self, **inputs: Tensor) -> None:
        self.metrics.update(**inputs)

    def compute(self) -> dict[str, float]:
        values = self.metrics.compute()
        return {name: float(values[self.internal[name]]) for name in self.names}

    def per_query(self, **inputs: Tensor) -> dict[str, Tensor]:
        """Per-query values [B] of each metric (NaN = not counted), from the functional API."""
        from torchrec_eval import functional

        out = {}
        for name in self.names:
            family = self.families[name]
            internal = self.internal[name]
            cutoff = None if internal == "rprecision" else int(internal.partition("@")[2])
            fn = getattr(functional, family)
            out[name] = fn(k=cutoff, reduction="none", **self.kwargs, **inputs)
        return out
