"""Preferences of the judgement groups that are partial orders (several sub-groups): the transitive
closure of their orders, one boolean matrix per group, built in batches of a cell budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from torchrec_eval.trec.pref_docs import JGCounts, doc_text, group_starts
from torchrec_eval.trec.tables import Prefs


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenated index ranges ``starts[i] .. ends[i] - 1``."""
    lengths = ends - starts
    total = int(lengths.sum())
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths - starts, lengths)


def size_batches(size: np.ndarray, cost: np.ndarray, budget: int) -> list[np.ndarray]:
    """Batches of the items (indices into ``size``): items of one size class (``size`` rounded up to a
    power of two) together, in their order, about ``budget`` padded cells (``cost`` of the class's
    largest item) a batch; an item over the budget is a batch alone."""
    bucket = np.ceil(np.log2(np.maximum(size, 1))).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    batches = []
    for cls in np.flatnonzero(np.bincount(bucket)):  # (not np.unique: it imports numpy.ma)
        items = order[bucket[order] == cls]
        per = max(1, budget // max(int(cost[items].max()), 1))
        batches += [items[i:i + per] for i in range(0, len(items), per)]
    return batches


def lower_products(slot: np.ndarray, doc: np.ndarray, cls: np.ndarray, cls_end: np.ndarray, batch: int, n: int,
                    k: int) -> np.ndarray:
    """[batch, n, n] int32: entry (b, i, j) the number of pairs of entries (x, y) of block b with
    document i of x, j of y, and y in a later class than x's but before ``cls_end`` of x's class.
    Entries: ``slot`` (block), ``doc`` (< n), ``cls`` (block-local class < k); ``cls_end`` [batch, k]
    (<= k: the block-local end of each class's segment, k for padding)."""
    flat = (slot * n + doc) * (k + 1) + cls
    members = np.bincount(flat, minlength=batch * n * (k + 1)).astype(np.int32).reshape(batch, n, k + 1)
    del flat
    after = members[:, :, ::-1].cumsum(axis=2, dtype=np.int32)[:, :, ::-1]  # after[.., c]: entries of classes >= c
    following = np.minimum(np.arange(1, k + 1), cls_end)[:, None, :]
    lower = np.take_along_axis(after, following, axis=2) - np.take_along_axis(after, cls_end[:, None, :], axis=2)
    del after
    # einsum's own loop, not BLAS: these are thin products, and BLAS threads contend on shared cores
    return np.einsum("bic,bcj->bij", members[:, :, :k], np.ascontiguousarray(lower.transpose(0, 2, 1)))


# cells (documents x documents of a block, padded) of the matrices built at once for partial orders
# and for prefs_pair
CELL_BUDGET = 1 << 19


def transitive_closure(reflexive: np.ndarray) -> np.ndarray:
    """The transitive closure of boolean relations ``[..., n, n]`` that hold on their diagonal (the
    diagonal stays set): repeated boolean matrix products until nothing changes."""
    closure = reflexive
    while True:
        f = closure.astype(np.float32)
        step = (f @ f) > 0
        del f
        if np.array_equal(step, closure):
            return closure
        closure = step


class _PartialDocs(NamedTuple):
    """The distinct documents of the partial-order JGs, in (JG, docid) order; each keeps its last entry."""

    uid: np.ndarray  # [E] each entry's document
    last: np.ndarray  # [D] each document's last entry (its level and docid rank)
    start: np.ndarray  # [P] each JG's first document
    size: np.ndarray  # [P] its number of documents


def _distinct_docs(entry: np.ndarray, jg: np.ndarray, docid: np.ndarray, partial: np.ndarray) -> _PartialDocs:
    """The distinct (JG, docid) of the ``entry`` (the entries of the JGs ``partial``, in JG order)."""
    k = jg[entry]
    order = np.lexsort((entry, docid[entry], k))
    doc_head = group_starts(np.column_stack([k[order], docid[entry[order]]]))
    uid = np.empty(len(entry), dtype=np.int64)
    uid[order] = np.cumsum(doc_head) - 1
    last = entry[order][np.append(np.flatnonzero(doc_head)[1:] - 1, len(order) - 1)]
    start = np.searchsorted(jg[last], partial)
    size = np.diff(np.append(start, len(last)))
    return _PartialDocs(uid, last, start, size)


def _count_docs(out: JGCounts, level: np.ndarray, doc_jg: np.ndarray, retrieved: np.ndarray, docs: _PartialDocs
                ) -> np.ndarray:
    """Adds each JG's relevant / non-relevant (retrieved) documents to ``out``; returns the documents
    that Rnonrel drops: the non-relevant ones after the first R of their JG (in docid order)."""
    num_jgs = len(out["num_rel"])
    relevant, nonrel = level > 0, level == 0
    for name, mask in (("num_rel", relevant), ("num_nonrel", nonrel), ("num_rel_ret", relevant & retrieved),
                       ("num_nonrel_ret", nonrel & retrieved)):
        out[name] += np.bincount(doc_jg[mask], minlength=num_jgs)
    seen = np.cumsum(nonrel)
    seen -= np.repeat(seen[docs.start] - nonrel[docs.start], docs.size)
    return nonrel & (seen > out["num_rel"][doc_jg])


class _Classes(NamedTuple):
    """The classes (sub-group, level) of the partial-order JGs, numbered within each JG; a class's
    segment (the classes its documents are preferred to) ends with its sub-group."""

    entry_cls: np.ndarray  # [E] each entry's class, numbered over the whole table
    first: np.ndarray  # [P] each JG's first class (numbered over the whole table)
    num_classes: np.ndarray  # [P] its number of classes (not ``count``: tuple's method)
    head_jg: np.ndarray  # [C] each class's JG (its index in ``partial``)
    head_local: np.ndarray  # [C] its number within its JG
    segment_end: np.ndarray  # [C] the end (exclusive, within its JG) of its segment


def _classes(entry: np.ndarray, entry_jg: np.ndarray, partial: np.ndarray, jg_start: np.ndarray, jg_end: np.ndarray,
             ec_head: np.ndarray, jsg_head: np.ndarray) -> _Classes:
    """The classes of the ``entry`` (those of the JGs ``partial``; ``entry_jg`` their index in it)."""
    cls_id = np.cumsum(ec_head) - 1
    jsg_id = np.cumsum(jsg_head) - 1
    jsg_first_cls = cls_id[jsg_head]
    first_cls = cls_id[jg_start[partial]]
    classes = cls_id[jg_end[partial] - 1] + 1 - first_cls
    head_entries = ec_head[entry]
    heads = entry[head_entries]  # each class's first entry
    head_p = entry_jg[head_entries]
    next_jsg = jsg_id[heads] + 1
    seg_end = np.where(next_jsg < len(jsg_first_cls), jsg_first_cls[np.minimum(next_jsg, len(jsg_first_cls) - 1)],
                       cls_id[-1] + 1)
    head_local = cls_id[heads] - first_cls[head_p]
    seg_end_local = np.minimum(seg_end - first_cls[head_p], classes[head_p])
    return _Classes(cls_id[entry], first_cls, classes, head_p, head_local, seg_end_local)


def _batch_closure(items: np.ndarray, entry_jg: np.ndarray, docs: _PartialDocs, classes: _Classes) -> np.ndarray:
    """[batch, n, n] the preferences of the JGs ``items`` (indices into ``partial``), closed under
    transitivity, on their stacked document x document matrices (padded to the largest); no diagonal."""
    batch, n, kk = len(items), int(docs.size[items].max()), int(classes.num_classes[items].max())
    slot_of = np.full(len(docs.size), -1, dtype=np.int64)
    slot_of[items] = np.arange(batch)
    sel = np.flatnonzero(slot_of[entry_jg] >= 0)
    sel_jg = entry_jg[sel]
    slot = slot_of[sel_jg]
    local_doc = docs.uid[sel] - docs.start[sel_jg]
    local_cls = classes.entry_cls[sel] - classes.first[sel_jg]
    del sel, sel_jg
    ends = np.full((batch, kk), kk, dtype=np.int64)
    hsel = np.flatnonzero(slot_of[classes.head_jg] >= 0)
    ends[slot_of[classes.head_jg[hsel]], classes.head_local[hsel]] = classes.segment_end[hsel]
    prefer = lower_products(slot, local_doc, local_cls, ends, batch, n, kk) > 0
    del slot, local_doc, local_cls, ends
    prefer[:, np.arange(n), np.arange(n)] = np.arange(n)[None, :] < docs.size[items][:, None]
    closure = transitive_closure(prefer)
    del prefer
    closure[:, np.arange(n), np.arange(n)] = False
    return closure


def _count_recalc(out: JGCounts, po_jg: np.ndarray, a: np.ndarray, b: np.ndarray, dropped: np.ndarray,
                  doc_rank: np.ndarray, doc_n: np.ndarray) -> None:
    """Adds the Rnonrel recalculations of the preferences a > b (documents) of the JGs ``po_jg`` to
    ``out``: those without a dropped document, fulfilled or possible, among all and the retrieved.
    ``doc_rank``: each document's docid rank; ``doc_n``: the judged retrieved documents of its query."""
    num_jgs = len(out["num_rel"])
    kept = ~dropped[a] & ~dropped[b]
    ka, kb = doc_rank[a[kept]], doc_rank[b[kept]]
    n_pair = doc_n[a[kept]]
    kjg = po_jg[kept]
    out["recalc_ful"] += np.bincount(kjg[(ka < kb) & (ka < n_pair)], minlength=num_jgs)
    out["recalc_poss"] += np.bincount(kjg, minlength=num_jgs)
    both = (ka < n_pair) & (kb < n_pair)
    out["recalc_ret_ful"] += np.bincount(kjg[both & (ka < kb)], minlength=num_jgs)
    out["recalc_ret_poss"] += np.bincount(kjg[both], minlength=num_jgs)


def count_partial_orders(out: JGCounts, partial: np.ndarray, jg: np.ndarray, jg_start: np.ndarray, jg_end: np.ndarray,
                    ec_head: np.ndarray, jsg_head: np.ndarray, docid: np.ndarray, rel: np.ndarray,
                    n_entry: np.ndarray, error: Callable[[int], None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The JGs ``partial`` (several sub-groups), all at once: each sub-group's order (a document with a
    higher level preferred), closed under transitivity by repeated boolean matrix products on the JGs'
    stacked document x document matrices (batched by size); fills their counts in ``out``. Returns
    their preferences (JG, preferred docid rank, other docid rank), in JG order; ``error(k)`` raises
    for the first JG ``k`` with a document of levels 0 and non-0, or a preference both ways."""
    empty = np.zeros(0, dtype=np.int32)
    if not partial.size:
        return empty.astype(np.int64), empty, empty
    num_jgs = len(out["num_rel"])
    entry = ranges(jg_start[partial], jg_end[partial])
    p_of = np.zeros(num_jgs, dtype=np.int64)
    p_of[partial] = np.arange(len(partial))
    entry_jg = p_of[jg[entry]]
    docs = _distinct_docs(entry, jg, docid, partial)
    u_doc, u_jg = docid[docs.last], jg[docs.last]
    num_docs = len(u_doc)
    positive = np.bincount(docs.uid, weights=rel[entry] > 0, minlength=num_docs) > 0
    zero = np.bincount(docs.uid, weights=rel[entry] == 0, minlength=num_docs) > 0
    bad = np.zeros(num_jgs, dtype=bool)
    bad[u_jg[positive & zero]] = True
    u_n = n_entry[docs.last]
    dropped = _count_docs(out, rel[docs.last], u_jg, u_doc < u_n, docs)
    classes = _classes(entry, entry_jg, partial, jg_start, jg_end, ec_head, jsg_head)
    pairs = []
    for items in size_batches(docs.size, np.maximum(docs.size, classes.num_classes) * docs.size, CELL_BUDGET):
        closure = _batch_closure(items, entry_jg, docs, classes)
        bad[partial[items[(closure & closure.transpose(0, 2, 1)).any(axis=(1, 2))]]] = True
        g, i, j = np.nonzero(closure)
        del closure
        base = docs.start[items[g]]
        pairs.append((items[g], base + i, base + j))
    if bad.any():
        error(int(np.flatnonzero(bad)[0]))
    p, a, b = (np.concatenate(x) for x in zip(*pairs, strict=True))
    order = np.argsort(p, kind="stable")
    p, a, b = p[order], a[order], b[order]
    po_jg = partial[p]
    _count_recalc(out, po_jg, a, b, dropped, u_doc, u_n)
    return po_jg, u_doc[a].astype(np.int32), u_doc[b].astype(np.int32)


def partial_order_error(start: int, end: int, docid: np.ndarray, rel: np.ndarray, jsg_head: np.ndarray,
                         prefs: Prefs, source: np.ndarray, qid: str) -> None:
    """Raises the error of the JG of entries ``start .. end - 1`` (several sub-groups): a document with
    rel_levels 0 and non-0, or two documents each preferred to the other (its closure recomputed alone)."""
    line = prefs.line[source]
    docs, levels = docid[start:end], rel[start:end]
    subgroup = np.cumsum(jsg_head[start:end])
    unique, local = np.unique(docs, return_inverse=True)
    size = len(unique)
    positive = np.zeros(size, dtype=bool)
    positive[local[levels > 0]] = True
    zero = np.zeros(size, dtype=bool)
    zero[local[levels == 0]] = True
    clash = np.flatnonzero(positive[local] & zero[local])
    if clash.size:
        entry = start + int(clash[-1])
        raise ValueError(f"{prefs.path}:{int(line[entry])}: document {doc_text(prefs, source, entry)!r} has both 0 and "
                         f"non-0 rel_levels in one judgement group of query {qid!r}")
    prefer = np.zeros((size, size), dtype=bool)
    i, j = np.nonzero((subgroup[:, None] == subgroup[None, :]) & (levels[:, None] > levels[None, :]))
    prefer[local[i], local[j]] = True
    closure = transitive_closure(prefer | np.eye(size, dtype=bool))
    np.fill_diagonal(closure, False)
    conflict = np.argwhere(closure & closure.T)
    first = start + int(np.flatnonzero(local == conflict[0, 0])[0])
    second = start + int(np.flatnonzero(local == conflict[0, 1])[0])
    raise ValueError(f"{prefs.path}:{int(line[first])}: inconsistent preferences in a judgement group of query "
                     f"{qid!r}: documents {doc_text(prefs, source, first)!r} and "
                     f"{doc_text(prefs, source, second)!r} (line {int(line[second])}) are each preferred, "
                     f"through its sub-groups, to the other")
