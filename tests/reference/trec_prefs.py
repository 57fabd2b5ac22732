"""Brute-force references for trec_eval's preference and judgement-group measures: plain Python
loops over queries, judgement groups and document pairs, written from trec_eval 10's definitions
(form_prefs_counts.c, m_prefs_*.c, form_res_rels_jg.c, m_*_avgjg.c), not from the library's code.

``prefs``: ``{qid: [(jg, jsg, docno, rel_level), ...]}``; ``run``: ``{qid: {docno: score}}``.
"""

from __future__ import annotations

from itertools import product


def _ranked(docs: dict[str, float], docno_ascending: bool, max_docs: int | None) -> list[str]:
    key = (lambda d: (-docs[d], d)) if docno_ascending else None
    if docno_ascending:
        ranked = sorted(docs, key=key)
    else:  # score descending, docno descending: sort by docno descending, then stably by score
        ranked = sorted(sorted(docs, reverse=True), key=lambda d: -docs[d])
    return ranked[:max_docs] if max_docs is not None else ranked


def prefs_query(lines: list[tuple[str, str, str, float]], docs: dict[str, float], max_docs: int | None) -> dict:
    """All 14 prefs measures of one query."""
    judged_docs = sorted({d for _, _, d, _ in lines})
    ranked = [d for d in _ranked(docs, True, max_docs) if d in set(judged_docs)]
    njr = len(ranked)
    docid = {d: i for i, d in enumerate(ranked)}
    for d in judged_docs:
        if d not in docid:
            docid[d] = len(docid)
    nj = len(docid)
    groups: dict[str, dict[str, list[tuple[float, int]]]] = {}
    for jg, jsg, d, rel in lines:
        groups.setdefault(jg, {}).setdefault(jsg, []).append((rel, docid[d]))
    counts = [[0] * nj for _ in range(nj)]
    jg_stats = []
    for jg in sorted(groups):
        sub = groups[jg]
        entries = sorted(((jsg, -rel, r, rel) for jsg in sub for rel, r in sub[jsg]))
        prefs = []  # (a, b): a preferred to b, with multiplicity for equivalence classes
        if len(sub) == 1:
            for x, y in product(entries, entries):
                if x[3] > y[3]:
                    prefs.append((x[2], y[2]))
            rels = [(e[3], e[2]) for e in entries]
            num_rel = sum(1 for rel, _ in rels if rel > 0)
            num_nonrel = len(rels) - num_rel
            num_rel_ret = sum(1 for rel, r in rels if rel > 0 and r < njr)
            num_nonrel_ret = sum(1 for rel, r in rels if rel <= 0 and r < njr)
            levels = sorted({e[3] for e in entries}, reverse=True)
            last = sorted(r for rel, r in rels if rel == levels[-1])
        else:
            members = sorted({e[2] for e in entries})
            edge = {(a, b): False for a in members for b in members}
            for x, y in product(entries, entries):
                if x[0] == y[0] and x[3] > y[3]:
                    edge[x[2], y[2]] = True
            for k in members:  # Warshall
                for a in members:
                    for b in members:
                        if edge[a, k] and edge[k, b]:
                            edge[a, b] = True
            prefs = [(a, b) for a in members for b in members if a != b and edge[a, b]]
            level = {}
            for e in entries:
                level[e[2]] = e[3]
            num_rel = sum(1 for v in level.values() if v > 0)
            num_nonrel = sum(1 for v in level.values() if v == 0)
            num_rel_ret = sum(1 for r, v in level.items() if v > 0 and r < njr)
            num_nonrel_ret = sum(1 for r, v in level.items() if v == 0 and r < njr)
        c = dict(ful_ret=0, poss_ret=0, ful_imp=0, poss_imp=0, notoccur=0)
        for a, b in prefs:
            counts[a][b] += 1
            if a < njr and b < njr:
                c["poss_ret"] += 1
                c["ful_ret"] += a < b
            elif a < njr or b < njr:
                c["poss_imp"] += 1
                c["ful_imp"] += a < njr
            else:
                c["notoccur"] += 1
        # Rnonrel recalculations (trec_eval's, including how it pairs the last class with itself)
        if len(sub) == 1:
            lower = [(a, b) for x, y in product(entries, entries) if x[3] > y[3] > levels[-1]
                     for a, b in [(x[2], y[2])]]
            firsts = last[:num_rel]
            re_ful = sum(1 for a, b in lower if a < b and a < njr)
            re_ful += sum(1 for e in entries for y in firsts if e[2] < y and e[2] < njr)
            re_poss = len(lower) + len(entries) * len(firsts)
            ret_lower = [(a, b) for a, b in lower if a < njr and b < njr]
            ret_firsts = [y for y in last if y < njr][:num_rel_ret]
            ret_x = [e[2] for e in entries if e[2] < njr]
            rr_ful = sum(1 for a, b in ret_lower if a < b) + sum(1 for x in ret_x for y in ret_firsts if x < y)
            rr_poss = len(ret_lower) + len(ret_x) * len(ret_firsts)
        else:
            nonrel = [r for r in sorted(level) if level[r] == 0]
            dropped = set(nonrel[num_rel:])
            kept = [(a, b) for a, b in prefs if a not in dropped and b not in dropped]
            re_ful = sum(1 for a, b in kept if a < b and a < njr)
            re_poss = len(kept)
            rr_ful = sum(1 for a, b in kept if a < b and b < njr)
            rr_poss = sum(1 for a, b in kept if a < njr and b < njr)
        jg_stats.append(dict(c, num_rel=num_rel, num_nonrel=num_nonrel, num_rel_ret=num_rel_ret,
                             num_nonrel_ret=num_nonrel_ret, re=(re_ful, re_poss), rr=(rr_ful, rr_poss)))
    out = {}
    ful_ret = sum(s["ful_ret"] for s in jg_stats)
    ful = ful_ret + sum(s["ful_imp"] for s in jg_stats)
    poss_ret = sum(s["poss_ret"] for s in jg_stats)
    poss_imp = poss_ret + sum(s["poss_imp"] for s in jg_stats)
    poss = poss_imp + sum(s["notoccur"] for s in jg_stats)
    out["prefs_num_prefs_poss"], out["prefs_num_prefs_ful"], out["prefs_num_prefs_ful_ret"] = poss, ful, ful_ret
    out["prefs_simp"] = ful / poss if poss else 0.0
    out["prefs_simp_ret"] = ful_ret / poss_ret if poss_ret else 0.0
    out["prefs_simp_imp"] = ful / poss_imp if poss_imp else 0.0
    for name, f, p in (("prefs_avgjg", ("ful_ret", "ful_imp"), ("poss_ret", "poss_imp", "notoccur")),
                       ("prefs_avgjg_ret", ("ful_ret",), ("poss_ret",)),
                       ("prefs_avgjg_imp", ("ful_ret", "ful_imp"), ("poss_ret", "poss_imp"))):
        total = 0.0
        for s in jg_stats:
            num, den = sum(s[k] for k in f), sum(s[k] for k in p)
            total += num / den if den else 0.0
        out[name] = total / len(jg_stats) if total > 0 else 0.0
    for name, ret in (("prefs_avgjg_Rnonrel", False), ("prefs_avgjg_Rnonrel_ret", True)):
        total = 0.0
        for s in jg_stats:
            r, n = (s["num_rel_ret"], s["num_nonrel_ret"]) if ret else (s["num_rel"], s["num_nonrel"])
            if r >= n:
                if ret:
                    num, den = s["ful_ret"], s["poss_ret"]
                else:
                    num = s["ful_ret"] + s["ful_imp"]
                    den = s["poss_ret"] + s["poss_imp"] + s["notoccur"]
                num += s["num_rel_ret"] * (r - n)
                den += s["num_rel"] * (r - n)
            else:
                num, den = s["rr"] if ret else s["re"]
            total += num / den if den else float("nan")
        out[name] = total / len(jg_stats) if total > 0 else 0.0
    # pairs, in trec_eval's loop order
    total, pairs = 0.0, 0
    for i in range(njr):
        for j in range(i + 1, njr):
            if counts[i][j] or counts[j][i]:
                pairs += 1
                total += counts[i][j] / (counts[i][j] + counts[j][i])
    out["prefs_pair_ret"] = total / pairs if pairs else 0.0
    for i in range(njr):
        for j in range(njr, nj):
            if counts[i][j] or counts[j][i]:
                pairs += 1
                total += counts[i][j] / (counts[i][j] + counts[j][i])
    out["prefs_pair_imp"] = total / pairs if pairs else 0.0
    for i in range(njr, nj):
        for j in range(i + 1, nj):
            if counts[i][j] or counts[j][i]:
                pairs += 1
    out["prefs_pair"] = total / pairs if pairs else 0.0
    return out


def jg_query(judgements: dict[str, dict[str, int]], docs: dict[str, float], level: int, max_docs: int | None,
             cutoffs: list[int], multiples: list[float], judged_only: bool = False) -> dict:
    """map_avgjg, P_avgjg_k, Rprec_mult_avgjg_m of one query; ``judgements``: ``{jg: {docno: rel}}``;
    ``judged_only`` (-J): each JG's list keeps only the documents it judges (rel >= 0), in rank order."""
    ranked = _ranked(docs, False, max_docs)
    out = {"map_avgjg": 0.0, **{f"P_avgjg_{k}": 0.0 for k in cutoffs},
           **{f"Rprec_mult_avgjg_{m:3.2f}": 0.0 for m in multiples}}
    for jg in sorted(judgements):
        rels = judgements[jg]
        num_rel = sum(1 for v in rels.values() if v >= 0 and v >= level)
        listed = [d for d in ranked if rels.get(d, -1) >= 0] if judged_only else ranked
        hit = [rels.get(d, -1) >= max(level, 0) and d in rels for d in listed]
        so_far, total = 0, 0.0
        for i, h in enumerate(hit):
            if h:
                so_far += 1
                total += so_far / (i + 1)
        if so_far:
            out["map_avgjg"] += total / num_rel
        for k in cutoffs:
            out[f"P_avgjg_{k}"] += sum(hit[:k]) / k
        for m in multiples:
            cut = int(m * num_rel + 0.9)
            if cut > 0:
                out[f"Rprec_mult_avgjg_{m:3.2f}"] += sum(hit[:cut]) / cut
    if len(judgements) > 1:
        out = {k: v / len(judgements) for k, v in out.items()}
    return out
