"""``convention=`` presets: reproduce another library's numbers with one argument.

Libraries disagree on almost every normalisation (Tamm et al., RecSys 2021, found five MAP values
for one input). A preset is a small named bundle of the explicit options below; an option passed
explicitly always wins over the preset. Sources: each library's own code (see
``docs/conventions.md`` and the references in ``tests/reference/conventions.py``).

========================  ===========  ==========  ===========  =============  =========  ========  ==============
convention                empty query  ties        P@k divides  AP@k divides   NDCG gain  log base  IDCG
========================  ===========  ==========  ===========  =============  =========  ========  ==============
(library default)         skip         index       k            min(k, R)      linear     2         cut at k
``"trec"`` (trec_eval)    0, counted   reverse id  k            R              linear     2         cut at k
``"ranx"``                0, counted   index       k            R              linear     2         cut at k
``"torchmetrics"``        0, counted   index\\*     k            hits in top k  linear     2         cut at k
``"recbole"``             skip         index       k            min(k, R)      binary     2         cut at k
``"jurity"``              skip         index       list length  min(k, R)      binary     2         all R (uncut)
``"recommenders"`` (MS)   skip         index       k            min(k, R)      binary     e         cut at k
``"spark"``               0, counted   index       k            min(k, R)      binary     e         cut at k
``"rectools"``            skip         index       k            R              binary     2         k positions
``"lenskit"``             skip         index       list length  min(R, list)   linear     2\\*\\*     cut at k
``"cornac"``              skip         index       k            R\\*\\*\\*        binary     2         cut at k
========================  ===========  ==========  ===========  =============  =========  ========  ==============

\\*\\* LensKit's discount is 1 / log2(max(i, 2)) (``discount="clipped_log"``); its preset also leaves an empty
list out of precision and AP, divides recall by min(R, k) and sets RBP's patience to 0.85.

\\*\\*\\* cornac's MAP ranks the whole list and puts every tied item at its tie group's last rank, with the
relevant items through the group's end (``tie_rank="group_max"``: give a k as long as the lists); its AUC
counts a tied (relevant, non-relevant) pair 0 (``tie_credit=0.0``).

Family options outside the table: ``"torchmetrics"`` averages tied scores in NDCG alone (\\*,
``average_ties=True``), as torchmetrics does. ``"jurity"`` leaves users with relevant items but an
empty recommendation list out of precision and MAP, ``"recommenders"`` out of precision, recall and
MAP (``empty_list_action="skip"``; their NDCG counts them as 0, as the default does).
``"recommenders"`` computes R-Precision as MS Recommenders' ``r_precision_at_k``: the hits in the top
min(k, R) over R (``denominator="r"``), averaged over the users with at least one such hit
(``no_hit_action="skip"``). A mean over no user is NaN by default; ``"recommenders"`` makes
precision, recall, MAP, NDCG and R-Precision 0.0 where no user has a relevant item in the top k
(``empty_mean="zero"``), as MS Recommenders returns 0.0 when its table of hits is empty -- R-Precision
stays NaN when hits exist but none in the top min(k, R), as MS's. ``"rectools"`` counts a cold
item as seen by one user in ``novelty`` (``cold_items="one_user"``), a one-item list as 0 in ``intra_list_diversity``
(``single_item="zero"``), leaves the pairs with an item without features (a NaN row of
``item_features``) out of a list's intra-list diversity (``featureless="nan"``), and scores
``average_popularity`` 0 when every popularity is 0 (``all_zero="zero"``), as RecTools does.
``"jurity"`` takes CTR@k as Jurity's ``CTR``: the top k of every recommended item, then the items
with a logged response among them (``unlogged="rank"``: the ``ignore_index`` items keep their places
in the ranking and are left out of both counts; by default they are dropped before the cut).

Notes on what a preset cannot change:

* trec_eval breaks score ties by document id, descending. With ``ties="reverse_index"`` the item
  index plays the document id: in the dense and ids forms, number the items in docno order (the
  ``torchrec-eval`` command does); the ranked form is already in the caller's order.
* torchmetrics.retrieval (since 2025) treats scores <= 0 as "not retrieved" in precision, recall,
  MAP and MRR; this library ranks every score, so its numbers agree for positive scores only.
  torchmetrics' NDCG averages tied scores: the preset sets ``average_ties=True`` for NDCG alone (the
  other metrics keep the index order), so it reproduces torchmetrics by itself. Its ``RetrievalFallOut``
  scores a query without a non-relevant candidate 1, its other metrics an empty query 0: a preset holds
  one ``empty_target_action`` ("neg"), so ``FallOut`` takes ``empty_target_action="pos"`` for its number.
* Repeated ids in the ranked form: trec_eval refuses them (naming the document), and so does this
  library by default. ranx's metrics count them as its arrays do (``"ranx"``): an id repeated in
  ``ranked_ids`` is a hit at each of its ranks (recall and AP may exceed 1), an id repeated in
  ``target_ids`` counts in R and in the ideal DCG, and a ranked item takes the gain of its first
  relevant row. (ranx's ``Run``/``Qrels`` collapse repeats on loading, the last one winning.)
  RecTools joins recommendations to interactions, so repeats multiply rows; its own tracker calls
  that a bug (MobileTeleSystems/RecTools#164), and ``"rectools"`` refuses repeats instead.
* An empty recommendation list is a query without a candidate: a ``ranked_ids`` row of padding only
  (or, in the dense and ids forms, every score ``-inf`` or masked -- there R counts the candidates
  only, so such a query has no relevant item and ``empty_target_action`` decides).
"""

from torchrec_eval.members.conventions import PRESETS, Preset, preset

__all__ = ["PRESETS", "Preset", "preset"]
