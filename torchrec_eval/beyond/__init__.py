r"""Beyond-accuracy metrics: coverage, concentration, diversity, novelty and serendipity of top-k lists.

Every metric reads the ids of each query's top ``k`` items (``batch.ranked.item_ids``, ``-1`` past a
short list) and keeps float64 sufficient statistics on the metric's device, reduced by a sum under
distributed sync, so the synced value equals the single-process value exactly:

* *catalogue metrics* (``coverage``, ``gini``, ``entropy``, ``inter_list_diversity``) keep item
  recommendation counts ``c_i`` -- how many lists of the group contain item ``i`` -- in a
  ``[G, S, num_items]`` state (``S`` = one row per cut-off, plus two weighted rows per cut-off for
  inter-list diversity). With ``num_groups=G`` this is O(G * num_items) memory: one count vector per group.
* *per-query metrics* (``intra_list_diversity``, ``novelty``, ``serendipity``,
  ``average_popularity``) keep, per group, the sum, the sum of squares and the count of the
  per-query values, like the top-k metrics, so :func:`torchrec_eval.comparison.uncertainty.confidence_interval`
  applies to them.

Notation: ``L_u`` is the set of (at most ``k``) items recommended to query ``u``, ``m_u = |L_u|``,
``n`` the number of queries with a non-empty list, ``N`` = ``num_items``, ``c_i`` the number of lists
containing item ``i`` and ``C = sum_i c_i``.

Definitions (and the library each follows):

* ``coverage@k`` = ``|{i : c_i > 0}| / N`` (RecBole ItemCoverage; RecTools with the catalogue size).
* ``gini@k`` = ``sum_j (2j - N - 1) c_(j) / (N C)`` over the counts sorted ascending, unrecommended
  items counting 0 (RecBole GiniIndex); 0 = even spread, ``1 - 1/N`` = one item only.
* ``entropy@k`` = ``-sum_i p_i log_b p_i`` with ``p_i = c_i / C`` and base ``b = 2`` (MS Recommenders'
  distributional coverage); ``base=math.e, normalization="distinct"`` is RecBole's ShannonEntropy.
* ``inter_list_diversity@k`` = mean over pairs ``u < v`` of ``1 - |L_u & L_v| / sqrt(m_u m_v)``
  (Jurity's cosine distance between binary top-k vectors, here exact instead of sampled).
* ``intra_list_diversity@k`` = mean over queries with ``m_u >= 2`` of the mean over pairs ``i < j``
  of ``L_u`` of ``1 - cos(f_i, f_j)``, or ``1 - sim_ij`` (Jurity, MS Recommenders).
* ``novelty@k`` = mean over queries of ``mean_{i in L_u} -log2 p_i`` (RecTools, MS Recommenders).
* ``serendipity@k`` = mean over queries of ``|{i in L_u : relevant, not in Pop_b}| / k``
  (Ge, Delgado-Battenfeld and Jannach 2010).
* ``average_popularity@k`` = mean over queries of ``mean_{i in L_u} pop_i`` (RecBole AveragePopularity).

Inter-list diversity is exact, without sampling pairs of users: with ``a_u = 1 / sqrt(m_u)``,

.. math::
    \sum_{u<v} \frac{|L_u \cap L_v|}{\sqrt{m_u m_v}} = \frac12 \sum_i \Big[\big(\sum_{u \ni i} a_u\big)^2
    - \sum_{u \ni i} a_u^2\Big],

so two weighted count vectors ``s_i = sum_{u ∋ i} a_u`` and ``t_i = sum_{u ∋ i} a_u^2`` plus ``n``
give the mean over the ``n (n - 1) / 2`` pairs. When every list has ``k`` items this is the mean
pairwise ``1 - overlap / k`` = ``1 - sum_i c_i (c_i - 1) / (k n (n - 1))``. Queries with an empty
list are left out (a cosine with an empty vector is undefined); with fewer than two lists the value
is NaN. With groups, pairs are formed within a group.

Intra-list diversity from item features uses the identity ``2 sum_{i<j} cos(f_i, f_j) =
||sum_i f^_i||^2 - sum_i ||f^_i||^2`` (``f^`` the unit-normalised features; a zero feature vector has
similarity 0 to everything), O(k d) per query. With ``item_similarity`` (for instance
:func:`cooccurrence_similarity` of a training interaction matrix, the MS Recommenders definition)
it reads the ``k x k`` block of the matrix. Lists of fewer than two items are not counted.

Novelty: ``p_i = pop_i / num_users`` when ``num_users`` is given (RecTools: the share of users who
interacted with the item) and ``p_i = pop_i / sum(pop)`` otherwise (MS Recommenders: the share of
training interactions; also right for ``item_popularity`` given as probabilities). An item with
popularity 0 is given the self-information of the least popular observed item (finite, documented
choice). Average popularity uses ``item_popularity`` as given (RecBole: training interaction counts).
Novelty and average popularity are averaged per query, then over queries with a non-empty list
(RecTools); when all lists have the same length this equals the pooled mean over all recommended
items (MS Recommenders, RecBole).

Serendipity: ``Pop_b`` is the list of the ``b`` most popular items (``baseline_size``, default ``k``;
ties: lower item id first) -- the "primitive" most-popular recommender of Ge, Delgado-Battenfeld and
Jannach (RecSys 2010). An item is serendipitous if it is relevant (the library's relevance rule,
``relevance_threshold``) and not in ``Pop_b``; the per-query value divides by ``k`` like Precision@k,
and queries with no relevant item follow ``empty_target_action``.

Layout: the formulas in :mod:`~torchrec_eval.beyond.concentration` (coverage, Gini index, entropy over
item counts), :mod:`~torchrec_eval.beyond.popularity` (novelty, average popularity, serendipity) and
:mod:`~torchrec_eval.beyond.diversity` (intra- and inter-list diversity); the checks of each family's
options in :mod:`~torchrec_eval.beyond.options`; one table of the families in
:mod:`~torchrec_eval.beyond.registry`; the state member in :mod:`~torchrec_eval.beyond.member`.

The overlap of two models' lists of each query (RecTools' Intersection, Jaccard, LensKit's RBO) reads two
rankings per batch instead of one: its formulas are in :mod:`~torchrec_eval.beyond.overlap`, the two lists
in :mod:`~torchrec_eval.beyond.overlap_inputs`, its member in :mod:`~torchrec_eval.beyond.overlap_member`
and its functions in :mod:`~torchrec_eval.beyond.functional`. The
metric classes live a layer up, in :mod:`torchrec_eval.metrics.beyond` (exported by :mod:`torchrec_eval`):
a family imports nothing above it.
"""

from torchrec_eval.beyond.diversity import cooccurrence_similarity
from torchrec_eval.beyond.member import BeyondMember, build_member
from torchrec_eval.beyond.propensity import inverse_propensity
from torchrec_eval.beyond.registry import REGISTRY

__all__ = ["REGISTRY", "BeyondMember", "build_member", "cooccurrence_similarity", "inverse_propensity"]
