"""The four input forms of a ranking metric, one module each; :func:`torchrec_eval.pipeline.prepare.prepare_batch`
picks the one a call uses and turns it into a :class:`~torchrec_eval.pipeline.batch.Batch`.

* :mod:`~torchrec_eval.pipeline.forms.dense` -- ``preds`` [B, N] scores, ``target`` [B, N] relevance;
* :mod:`~torchrec_eval.pipeline.forms.ids` -- ``preds`` [B, N], ``target_ids`` [B, T] (``target_gains`` [B, T]);
* :mod:`~torchrec_eval.pipeline.forms.ranked` -- ``ranked_ids`` [B, L], ``target_ids`` [B, T];
* :mod:`~torchrec_eval.pipeline.forms.flat` -- 1-D ``preds``, ``target`` and ``indexes``.

:mod:`~torchrec_eval.pipeline.forms.common` holds what the scored forms share.
"""

FORMS = (
    "dense: update(preds [B, N], target [B, N]); "
    "ids: update(preds [B, N], target_ids=[B, T]); "
    "ranked: update(ranked_ids=[B, L], target_ids=[B, T]); "
    "flat: update(preds [M], target [M], indexes=[M])"
)
