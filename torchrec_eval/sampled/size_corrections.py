r"""K&R's corrections where each query has its own catalogue size n_q (uniform draws).

A correction :math:`c^{(n)}` [P, m + 1] (the bias-variance one,
:func:`~torchrec_eval.sampled.estimators.bias_variance_rows`, or the constrained one,
:func:`~torchrec_eval.sampled.constrained.constrained_rows`) is worked out for one n; a query of size n_q and
sampled rank s scores :math:`c^{(n_q)}_s`, and the estimate is the mean of those values over the queries, as for
one n (the same K&R objective, query by query). It is a linear estimator, so each query's value is kept in the
sums of the per-query values and their squares.

A batch's sizes can all differ (the items a user has not interacted with), and one construction per size would
cost a few milliseconds each. So :math:`c^{(n)}` is read off a polynomial in :math:`x = 1/n`, smooth in x away
from n ~ m, on the dyadic panel :math:`[2^j, 2^{j+1})` that holds n: the exact rows at 17 sizes of the panel
(Chebyshev's nodes in x, rounded to whole sizes), barycentric interpolation between them. Each panel checks itself
when it is built, against the exact rows at three sizes between its nodes: where one differs by more than 1e-11
of the rows' largest value, it splits in two, down to panels of 64 sizes, whose sizes take their own exact rows.
A panel is built once it would otherwise have served more sizes their own rows, over the batches, than building
it costs (17 nodes and 3 checks), twice that for each panel above it that failed its check, whose halves tend to
fail too; until then its sizes take their own rows (the constrained rows at m = 100 and sizes 10^3..10^4, whose
panels split down to 64 sizes: a first batch of 256 sizes took 39 s when every panel it touched was built, 5 s
now).
The constrained correction is smooth in n between the sizes where its active set changes, so its panels split
around those; K&R's least-bias rows (gamma = 0) are no smooth function of n, so each size takes its own. The
tests hold sizes from m + 1 to 10^9 to 1e-9 of their exact rows. Panels are cached for the process, shared by
every metric of the same correction (:func:`shared_corrections`; one per dyadic range of sizes met, and the halves
of the split ones), exact rows up to 4,096 sizes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["SizeCorrections", "shared_corrections"]

_NODES = 17  # per panel
_SMALLEST_PANEL = 64  # sizes; a panel this narrow gives each of its sizes its own exact rows
_TOLERANCE = 1e-11  # of the rows' largest value, at the panel's check
_MAX_EXACT = 4096  # cached exact rows


class SizeCorrections:
    """The correction rows :math:`c^{(n)}` [P, m + 1] of every catalogue size n of a batch (see the module).

    Args:
        rows_of: the exact rows of one size, ``rows_of(n)`` [P, m + 1] (a picklable callable: a
            ``functools.partial`` of :func:`~torchrec_eval.sampled.estimators.bias_variance_rows`, say).
        num_negatives: m.
        smooth: whether the rows are a smooth function of n between changes of regime (False: each size its own).

    Example:
        >>> import functools, torch
        >>> from torchrec_eval.sampled.estimators import bias_variance_rows
        >>> rows_of = functools.partial(bias_variance_rows, [("recall", 10)], num_negatives=20, gamma=0.01)
        >>> corrections = SizeCorrections(rows_of, num_negatives=20)
        >>> mass = torch.zeros(2, 21, dtype=torch.float64)
        >>> mass[:, 0] = 1  # both held-out items first among their negatives
        >>> values = corrections.values(mass, torch.tensor([500, 123_456]))
        >>> exact = bias_variance_rows([("recall", 10)], 123_456, 20, 0.01)[0, 0]
        >>> bool(torch.isclose(values[1, 0], exact, rtol=1e-9, atol=0))
        True
    """

    def __init__(self, rows_of: Callable[[int], Tensor], num_negatives: int, smooth: bool = True) -> None:
        self.rows_of, self.num_negatives, self.smooth = rows_of, num_negatives, smooth
        self._exact: dict[int, Tensor] = {}
        self._panels: dict[tuple[int, int], _Fit | str] = {}  # a fit, _SPLIT or _EXACT
        self._served: dict[tuple[int, int], int] = {}  # sizes of a panel not built yet served their own rows

    def values(self, mass: Tensor, sizes: Tensor) -> Tensor:
        """[B, P] each query's corrected value: its distribution of sampled ranks ``mass`` [B, m + 1] (a 1, or a
        tie's spread) times the rows of its size ``sizes`` [B] (read on the host: one sync). A panel's queries take
        the rows of its nodes, weighted: by the interpolant, or one-hot where each size has its own rows."""
        distinct, inverse = torch.unique(sizes.cpu(), return_inverse=True)
        by_panel: dict[tuple[int, int], tuple[_Fit | str, Tensor]] = {}
        lengths = torch.searchsorted(_POWERS_OF_TWO, distinct, right=True)  # each size's bit length
        for length in torch.unique(lengths).tolist():  # a dyadic panel at a time, not a size at a time
            low, high = max(1 << (length - 1), self.num_negatives + 1), 1 << length
            self._resolve(low, high, (lengths == length).nonzero().squeeze(1), distinct, _NODES + 3, by_panel)
        parts, order = [], []
        for panel, (fit, members) in by_panel.items():
            if fit == _PENDING:  # sizes served their own rows count towards building the panel
                self._served[panel] = self._served.get(panel, 0) + len(members)
            rows = torch.isin(inverse, members).nonzero().squeeze(1)
            if isinstance(fit, str):  # each size its own exact rows
                stack = torch.stack([self._rows(size) for size in distinct[members].tolist()])
                weights = (inverse[rows].unsqueeze(1) == members).to(torch.float64)
            else:
                stack, weights = fit.rows, fit.weights_at(1.0 / distinct[inverse[rows]].to(torch.float64))
            rows = rows.to(mass.device)
            node_values = torch.einsum("bm,jpm->bjp", mass[rows], stack.to(mass.device))  # [b, J, P]
            parts.append(torch.einsum("bj,bjp->bp", weights.to(mass.device), node_values))
            order.append(rows)
        return torch.cat(parts)[torch.cat(order).argsort()]

    def _resolve(self, low: int, high: int, members: Tensor, distinct: Tensor, cost: int,
                 out: dict[tuple[int, int], tuple[_Fit | str, Tensor]]) -> None:
        """Put the ``members`` (positions in ``distinct``) of the panel [low, high) under the panel that serves
        them in ``out``: this one with its fit, or, where it failed its check, the halves (recursively);
        ``_EXACT`` where a panel is too narrow to fit, ``_PENDING`` where one not built yet would serve no more
        sizes their own rows, with these, than building it constructs (``cost``: its nodes and checks, twice that
        for each panel above it that failed its check, as its halves tend to): a panel costs at most twice what
        it serves, over the batches."""
        fit = self._panels.get((low, high))
        if fit is None:
            if self._served.get((low, high), 0) + len(members) <= cost:
                out[(low, high)] = (_PENDING, members)
                return
            fit = self._panels[(low, high)] = self._build(low, high)
        if fit != _SPLIT:
            out[(low, high)] = (fit, members)
            return
        middle = (low + high) // 2
        below = distinct[members] < middle
        for half, part in (((low, middle), members[below]), ((middle, high), members[~below])):
            if len(part):
                self._resolve(*half, part, distinct, 2 * cost, out)

    def _build(self, low: int, high: int) -> _Fit | str:
        """The panel [low, high)'s interpolant, checked against the exact rows between its nodes; ``_SPLIT`` where
        the check fails, ``_EXACT`` for a panel too narrow to fit."""
        if high - low < 2 * _SMALLEST_PANEL or not self.smooth:
            return _EXACT
        a, b = 1.0 / high, 1.0 / low
        angles = [math.pi * (2 * j + 1) / (2 * _NODES) for j in range(_NODES)]
        sizes = sorted({min(max(round(1.0 / ((a + b) / 2 + (b - a) / 2 * math.cos(t))), low), high - 1)
                        for t in angles})
        fit = _Fit(torch.tensor([1.0 / size for size in sizes], dtype=torch.float64), a, b,
                   torch.stack([self.rows_of(size) for size in sizes]))
        middle = len(sizes) // 2
        for first, second in ((sizes[0], sizes[1]), (sizes[middle - 1], sizes[middle]), (sizes[-2], sizes[-1])):
            size = (first + second) // 2
            exact = self._rows(size)
            weights = fit.weights_at(torch.tensor([1.0 / size], dtype=torch.float64))[0]
            interpolated = torch.einsum("j,jpm->pm", weights, fit.rows)
            if float((interpolated - exact).abs().max()) > _TOLERANCE * float(exact.abs().max()):
                return _SPLIT
        return fit

    def _rows(self, size: int) -> Tensor:
        """The exact rows of one size, cached (a bounded cache: cleared when full)."""
        rows = self._exact.get(size)
        if rows is None:
            if len(self._exact) >= _MAX_EXACT:
                self._exact.clear()
            rows = self._exact[size] = self.rows_of(size)
        return rows


_SPLIT, _EXACT, _PENDING = "split", "exact", "pending"
_POWERS_OF_TWO = 2 ** torch.arange(63)  # a size's bit length: how many of these are at most it
_SHARED: dict[tuple[str, ...], SizeCorrections] = {}
_MAX_SHARED = 8  # corrections kept for the process, the oldest dropped first


def shared_corrections(rows_of: functools.partial[Tensor], num_negatives: int, smooth: bool) -> SizeCorrections:
    """The process's one :class:`SizeCorrections` of this correction (the same function and arguments), so that
    every metric of it reuses the panels the others built: a new metric each epoch or each model costs them once.

    Example:
        >>> import functools
        >>> from torchrec_eval.sampled.estimators import bias_variance_rows
        >>> rows_of = functools.partial(bias_variance_rows, [("mrr", None)], num_negatives=10, gamma=0.01)
        >>> shared_corrections(rows_of, 10, True) is shared_corrections(functools.partial(
        ...     bias_variance_rows, [("mrr", None)], num_negatives=10, gamma=0.01), 10, True)
        True
    """
    key = (rows_of.func.__module__, rows_of.func.__qualname__, repr(rows_of.args),
           repr(sorted(rows_of.keywords.items())), str(num_negatives), str(smooth))
    corrections = _SHARED.get(key)
    if corrections is None:
        if len(_SHARED) >= _MAX_SHARED:
            del _SHARED[next(iter(_SHARED))]
        corrections = _SHARED[key] = SizeCorrections(rows_of, num_negatives, smooth)
    return corrections


class _Fit:
    """A panel's interpolant: the rows [J, P, m + 1] at the nodes ``x`` [J] (= 1 / size) of the panel's x range
    [a, b], and their barycentric weights (computed on the range mapped to [-1, 1]: no under- or overflow)."""

    def __init__(self, x: Tensor, a: float, b: float, rows: Tensor) -> None:
        self.a, self.b, self.rows = a, b, rows
        self.nodes = self._scaled(x)
        differences = self.nodes.unsqueeze(1) - self.nodes.unsqueeze(0)
        self.weights = 1.0 / torch.where(differences == 0, 1.0, differences).prod(1)

    def _scaled(self, x: Tensor) -> Tensor:
        return (2 * x - self.a - self.b) / (self.b - self.a)

    def weights_at(self, x: Tensor) -> Tensor:
        """[len(x), J] the weights of the node rows in the interpolant at each ``x`` (barycentric, second form;
        a point on a node takes that node's rows)."""
        difference = self._scaled(x).unsqueeze(1) - self.nodes.unsqueeze(0)
        on_node = difference == 0
        terms = self.weights / torch.where(on_node, 1.0, difference)
        terms = torch.where(on_node.any(1, keepdim=True), on_node.to(terms.dtype), terms)
        return terms / terms.sum(1, keepdim=True)
