"""Read TREC run and qrels files and rank them, as trec_eval does, without a Python loop over lines.

* A **run** file has one line per retrieved document: ``qid Q0 docid rank score tag``. The rank
  column is ignored, as trec_eval ignores it: documents are ranked by ``score`` descending, and equal
  scores by ``docid`` descending (byte order, ``strcmp``), which is trec_eval's order. Other tie
  orders: ``ties="file"`` keeps the file's order among equal scores, ``ties="ranx"`` is the order
  ``ranx.Run`` gives them (see :func:`ranking_order`).
* A **qrels** file has one line per judged document: ``qid iter docid rel``. The ``iter`` column is
  ignored; ``rel > 0`` is relevant (or ``rel >= relevance_level`` when one is given) and is the
  document's gain; ``rel <= 0`` is judged non-relevant, and trec_eval counts ``rel < 0`` as unjudged.

Ids stay bytes: a document id is a row of uint64 words (:mod:`torchrec_eval.trec.parse`), and a run's
documents are matched with the qrels by a 64-bit hash of (query, document) checked word by word, so
no string is made per line. :func:`to_ranked` returns, for each evaluated query, ``ranked_ids`` [Q, L]
and ``target_ids`` / ``target_gains`` [Q, T], ``-1`` padded: what ``RankingMetrics.update(ranked_ids=...,
target_ids=..., target_gains=...)`` takes. :func:`rank_judgements` returns the same ranking in the
sparse form trec_eval's measures need (:class:`torchrec_eval.trec.measures.Judgements`).

The subpackage holds trec_eval's engine, a module per job: the reader (``parse``: columns of a file;
``tables``: runs and qrels; ``keys``: query codes and the (query, document) look-up; ``repeats``), the
ranking (``order``, ``ranx``; ``ranked``: the two ranked forms), trec_eval's measures (``spec``: names and
parameters; ``measures``: the evaluation; ``stats``, ``gains``, ``more``: per-query values), its other
judgement formats (``formats``, ``prefs``, ``jg``), ``-D`` (``debug``, ``debug_prefs``), ``-Z``
(``zscore``) and ``-h -m`` (``help``).

A malformed line raises a ``ValueError`` that starts with ``FILE:LINE:``, as do a document listed
twice for one query (trec_eval refuses those too) and non-finite scores.

Example:
    >>> import tempfile, os
    >>> from torchrec_eval.trec import read_run, read_qrels, to_ranked
    >>> folder = tempfile.mkdtemp()
    >>> run_path, qrels_path = os.path.join(folder, "run"), os.path.join(folder, "qrels")
    >>> with open(run_path, "w") as f:
    ...     _ = f.write("q1 Q0 d1 1 0.5 sys\\nq1 Q0 d2 2 0.5 sys\\nq1 Q0 d3 3 0.9 sys\\n")
    >>> with open(qrels_path, "w") as f:
    ...     _ = f.write("q1 0 d1 2\\nq1 0 d3 0\\n")
    >>> data = to_ranked(read_run(run_path), read_qrels(qrels_path))
    >>> data.qids, data.docids[data.ranked_ids.numpy()].tolist()
    (['q1'], [['d3', 'd2', 'd1']])
    >>> data.docids[data.target_ids.numpy()].tolist(), data.target_gains.tolist()
    ([['d1']], [[2.0]])
"""

from torchrec_eval.trec.order import TIES, ranking_order
from torchrec_eval.trec.ranked import TrecRanked, rank_judgements, to_ranked
from torchrec_eval.trec.tables import Qrels, Run, read_qrels, read_run

__all__ = ["Qrels", "Run", "TIES", "TrecRanked", "rank_judgements", "ranking_order", "read_qrels", "read_run",
           "to_ranked"]
