"""Preferences of the judgement groups that are equivalence classes (one sub-group: every document
against every document of a lower level), and the ``prefs_avgjg_Rnonrel`` recalculation."""

from __future__ import annotations

import numpy as np

from torchrec_eval.trec.pref_docs import ENTRY_CHUNK, JGCounts, doc_text, position_in_group
from torchrec_eval.trec.tables import Prefs

# what an error names: (the table, each entry's place in it, rel_level, query row, the evaluated qids)
ErrorSource = tuple[Prefs, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def count_classes(out: JGCounts, jg: np.ndarray, ec: np.ndarray, ec_start: np.ndarray, ec_jg: np.ndarray,
                  last_ec: np.ndarray, docid: np.ndarray, n: np.ndarray, num_jgs: int, big: int,
                  where: ErrorSource) -> None:
    """The preferences of the equivalence-class JGs, counted by area without enumerating them: entry a
    against each lower class e of its JG (a loop over class distance), with ``searchsorted`` on the
    (class, docid) keys: how many of e's documents rank before a, and how many are retrieved."""
    if not ec_jg.any():
        return
    keys = ec.astype(np.int64) * big + docid  # sorted: classes in order, docids ascending within each
    ec_end = np.append(ec_start[1:], len(keys))
    first_error = None  # (distance, entry, its other entry): the one the loop over distances met first
    # chunks of entries, each against its lower classes: the temporaries stay the chunk's size (the
    # counts are integers, their order of summation does not matter)
    for chunk in range(0, len(ec_jg), ENTRY_CHUNK):
        part = chunk + np.flatnonzero(ec_jg[chunk:chunk + ENTRY_CHUNK])
        a_ec, a_jg, x, nn = ec[part].astype(np.int64), jg[part], docid[part], n[part]
        a_ret = x < nn
        distance = 1
        while True:
            live = np.flatnonzero(a_ec + distance <= last_ec[a_jg])
            if not live.size:
                break
            e = a_ec[live] + distance
            base = e * big
            size = ec_end[e] - ec_start[e]
            below = np.searchsorted(keys, base + x[live]) - ec_start[e]
            equal = np.searchsorted(keys, base + x[live], "right") - ec_start[e] - below
            if equal.any():
                i = np.flatnonzero(equal)[0]
                found = (distance, int(part[live[i]]), int(ec_start[e[i]] + below[i]))
                first_error = found if first_error is None else min(first_error, found)
            ret = np.minimum(np.searchsorted(keys, base + nn[live]) - ec_start[e], size)
            k, r = a_jg[live], a_ret[live]
            for name, count in (("ful_ret", np.where(r, ret - below, 0)), ("poss_ret", np.where(r, below, 0)),
                                ("ful_imp", np.where(r, size - ret, 0)), ("poss_imp", np.where(r, 0, ret)),
                                ("notoccur", np.where(r, 0, size - ret))):
                out[name] += np.bincount(k, weights=count, minlength=num_jgs).astype(np.int64)
            # Rnonrel recalculation, first part: the pairs of classes other than the last
            inner = e != last_ec[k]
            out["recalc_ful"] += np.bincount(k[inner], weights=np.where(r, size - below, 0)[inner],
                                             minlength=num_jgs).astype(np.int64)
            out["recalc_poss"] += np.bincount(k[inner], weights=size[inner], minlength=num_jgs).astype(np.int64)
            out["recalc_ret_ful"] += np.bincount(k[inner], weights=np.where(r, ret - below, 0)[inner],
                                                 minlength=num_jgs).astype(np.int64)
            out["recalc_ret_poss"] += np.bincount(k[inner], weights=np.where(r, ret, 0)[inner],
                                                  minlength=num_jgs).astype(np.int64)
            distance += 1
    if first_error is not None:
        _two_levels(where, first_error[1], first_error[2])


def _two_levels(where: ErrorSource, i: int, j: int) -> None:
    prefs, source, rel, rows, qids = where
    line = prefs.line[source]
    first, second = sorted((i, j), key=lambda e: line[e])
    raise ValueError(f"{prefs.path}:{int(line[second])}: document {doc_text(prefs, source, second)!r} has two "
                     f"rel_levels ({rel[first]:g} at line {int(line[first])}, {rel[second]:g}) in one judgement "
                     f"sub-group of query {str(qids[rows[first]])!r}")


def recalc_classes(out: JGCounts, jg: np.ndarray, ec: np.ndarray, ec_jg: np.ndarray, last_ec: np.ndarray,
                   docid: np.ndarray, n: np.ndarray, num_jgs: int, big: int) -> None:
    """trec_eval's ``prefs_avgjg_Rnonrel`` recalculation of an equivalence-class JG with more
    non-relevant than relevant documents (``recalculate`` in m_prefs_avgjg_Rnonrel*.c), its second part
    (the pairs of classes other than the last are counted by :func:`count_classes`): every entry of the JG
    (the last class's too) against the first R entries of the last class; for ``_ret`` retrieved
    entries only, R the relevant retrieved ones."""
    # every entry against the first R of the last class
    in_last = np.flatnonzero(ec_jg & (ec == last_ec[jg]))
    place = position_in_group(jg[in_last])
    for suffix, limit in (("", out["num_rel"]), ("_ret", out["num_rel_ret"])):
        chosen = in_last[place < limit[jg[in_last]]]
        if suffix:
            chosen = chosen[docid[chosen] < n[chosen]]
        keys = jg[chosen].astype(np.int64) * big + docid[chosen]  # sorted: by JG, then docid within the class
        entries = np.zeros(num_jgs, dtype=np.int64)
        for chunk in range(0, len(ec_jg), ENTRY_CHUNK):  # bounded temporaries
            x = chunk + np.flatnonzero(ec_jg[chunk:chunk + ENTRY_CHUNK])
            retrieved = docid[x] < n[x]
            if suffix:
                x, retrieved = x[retrieved], retrieved[retrieved]
            k = jg[x].astype(np.int64)
            after = np.searchsorted(keys, (k + 1) * big) - np.searchsorted(keys, k * big + docid[x], "right")
            out[f"recalc{suffix}_ful"] += np.bincount(k, weights=np.where(retrieved, after, 0),
                                                      minlength=num_jgs).astype(np.int64)
            entries += np.bincount(k, minlength=num_jgs)
        out[f"recalc{suffix}_poss"] += entries * np.bincount(jg[chosen], minlength=num_jgs)
