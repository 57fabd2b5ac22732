"""One registry of every family a suite takes: its cut-off rule, options, direction and the member it builds.

Each family package keeps the table its engine needs (:data:`torchrec_eval.ranking.registry.REGISTRY`,
:data:`torchrec_eval.pairwise.registry.REGISTRY`, :data:`torchrec_eval.beyond.registry.REGISTRY`: formulas,
state layouts); :func:`families` reads them into one :class:`Family` schema, and
:func:`find_family` looks a name up, aliases included. :class:`~torchrec_eval.RankingMetrics` reads
nothing else, and every class reads its ``higher_is_better`` from its package's table, so each fact is
written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from torchrec_eval.beyond import member as beyond_member
from torchrec_eval.beyond.registry import REGISTRY as BEYOND
from torchrec_eval.members.conventions import resolve_options
from torchrec_eval.members.interface import Member
from torchrec_eval.pairwise import member as pairwise_member
from torchrec_eval.pairwise import off_policy
from torchrec_eval.pairwise.registry import REGISTRY as PAIRWISE
from torchrec_eval.ranking import list_weights
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.registry import REGISTRY as RANKING

#: (family, its cut-offs in request order) pairs, the suite's options per family, convention, ties -> a member
Build = Callable[[list[tuple[str, list[int | None]]], dict[str, dict[str, Any]], str | None, str | None], Member]


@dataclass(frozen=True)
class Family:
    """One family of a suite.

    Attributes:
        name: its name in metric names (``"ndcg"`` in ``"ndcg@10"``).
        cutoff: ``"k"``: it needs one; ``"k_or_r"``: it may take none (a cut at R); ``"none"``: it takes none.
        options: option name -> its allowed values; ``()``: any value, checked when the member is built.
        higher_is_better: which way is better (None: neither), for tools that read it.
        build: builds one member for every requested family sharing this ``build``.
        upper_bound: the most its value can be (a plot's y axis reaches it); None: unbounded above or set by the
            user's data.
        aliases: other names a suite takes for it.
        host_reads: whether its batch shape depends on the data, read on the host, so that its update
            cannot be one compiled graph (FCP's grade levels; a ``"k_or_r"`` family without a cut-off
            ranks down to the batch's largest R: see :meth:`reads_host`).
    """

    name: str
    cutoff: str
    options: dict[str, tuple[Any, ...]]
    higher_is_better: bool | None
    build: Build
    upper_bound: float | None = None
    aliases: tuple[str, ...] = ()
    host_reads: bool = False

    def reads_host(self, key: str) -> bool:
        """Whether the value ``key`` (``"fcp"``, ``"rprecision"``, ``"rprecision@10"``) reads its batch on the host."""
        return self.host_reads or (self.cutoff == "k_or_r" and "@" not in key)

    @property
    def checks_cutoff(self) -> bool:
        """Whether the suite refuses the name without a cut-off itself (top-k families; the other members
        say it in their own words)."""
        return self.build is _top_k and self.cutoff == "k"


def _top_k(requests: list[tuple[str, list[int | None]]], options: dict[str, dict[str, Any]],
          convention: str | None, ties: str | None) -> Member:
    """One :class:`~torchrec_eval.ranking.member.TopKMember` for every top-k family (an explicit ``ties`` overrides a
    preset's ``average_ties``)."""
    return TopKMember([make_entry(family, ks, resolve_options(convention, family, options.get(family, {}), ties))
                 for family, ks in requests])


def _builder(module: Any) -> Build:
    def build(requests: list[tuple[str, list[int | None]]], options: dict[str, dict[str, Any]],
              convention: str | None, ties: str | None) -> Member:
        pairs = [(family, one) for family, ks in requests for one in ks]
        family_options = {family: resolve_options(convention, family, options.get(family, {})) for family, _ in pairs}
        return module.build_member(pairs, family_options)

    return build


_pairwise, _beyond = _builder(pairwise_member), _builder(beyond_member)
_off_policy, _list_weights = _builder(off_policy), _builder(list_weights)

def families() -> dict[str, Family]:
    """Every family, in the order of the members a suite builds (top-k, pairwise, beyond-accuracy), read from the
    registries when asked: the top-k families enter theirs as :mod:`torchrec_eval.ranking.families` loads, and
    that package imports this layer, so a table built at import time would miss them."""
    return {
        **{name: Family(name, spec.cutoff, spec.options, spec.higher_is_better, _top_k, spec.upper_bound, spec.aliases)
           for name, spec in RANKING.items()},
        **{name: Family(name, spec.cutoff, spec.options, spec.higher_is_better, _pairwise, spec.upper_bound,
                        spec.aliases, spec.host_reads) for name, spec in PAIRWISE.items()},
        **{name: Family(name, "k", dict.fromkeys(spec.options, ()), spec.higher_is_better, _beyond, spec.upper_bound)
           for name, spec in BEYOND.items()},
        # the families of per-item inputs beside the forms (suites/ranking.py's update, metrics/item_inputs.py)
        **{f"{estimator}_ctr": Family(f"{estimator}_ctr", "k", {}, True, _off_policy)
           for estimator in off_policy.ESTIMATORS},
        "weighted_rbp": Family("weighted_rbp", "k", {}, True, _list_weights),
    }


def aliases() -> dict[str, str]:
    """Every alias a suite takes -> the family's name (``"hr"`` -> ``"hitrate"``), from the families' entries."""
    return {alias: name for name, family in families().items() for alias in family.aliases}


def upper_bound(keys: Iterable[str]) -> float | None:
    """The most the values ``keys`` (``"ndcg@10"``, ...) can be, where their families share one bound (a plot's y
    axis reaches it); None where one is unbounded or they differ."""
    table = families()
    bounds = {getattr(table.get(canonical(key.partition("@")[0])), "upper_bound", None) for key in keys}
    return bounds.pop() if len(bounds) == 1 else None


def canonical(family: str) -> str:
    """The family an alias stands for (any other name unchanged)."""
    return aliases().get(family, family)


def find_family(family: str) -> Family | None:
    """The family of a name or alias (lower case, without ``@k``), or None."""
    return families().get(canonical(family))


def build_members(requested: dict[str, list[int | None]], options: dict[str, dict[str, Any]],
                  convention: str | None, ties: str | None) -> list[Member]:
    """The members of a suite: one per ``build``, in the order of :func:`families`.

    Args:
        requested: family -> its cut-offs, in request order.
        options: per-family options (aliases resolved).
        convention, ties: the suite's, for the presets' options.
    """
    groups: dict[Build, list[tuple[str, list[int | None]]]] = {}
    for spec in families().values():
        groups.setdefault(spec.build, [])
    for family, ks in requested.items():
        groups[families()[family].build].append((family, ks))
    return [build(requests, options, convention, ties) for build, requests in groups.items() if requests]
