"""The four input forms of a ranking metric; :func:`torchrec_eval.pipeline.prepare.prepare_batch` picks the one a
call uses and turns it into a :class:`~torchrec_eval.pipeline.batch.Batch`.

* :mod:`~torchrec_eval.pipeline.forms.scored` -- the scored forms: dense, ``preds`` [B, N] scores and ``target``
  [B, N] relevance, ranked there; and ids, ``preds`` [B, N] with ``target_ids`` [B, T] (``target_gains`` [B, T]),
  whose targets :mod:`~torchrec_eval.pipeline.forms.ids` finds in the ranking;
* :mod:`~torchrec_eval.pipeline.forms.ranked` -- ``ranked_ids`` [B, L], ``target_ids`` [B, T];
* :mod:`~torchrec_eval.pipeline.forms.flat` -- 1-D ``preds``, ``target`` and ``indexes``.

:mod:`~torchrec_eval.pipeline.forms.candidates` holds what the scored forms share: the scores' checks and which
items are candidates.
"""

FORMS = (
    "dense: update(preds [B, N], target [B, N]); "
    "ids: update(preds [B, N], target_ids=[B, T]); "
    "ranked: update(ranked_ids=[B, L], target_ids=[B, T]); "
    "flat: update(preds [M], target [M], indexes=[M])"
)
