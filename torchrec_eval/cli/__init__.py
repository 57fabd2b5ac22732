"""The ``torchrec-eval`` command (also ``python -m torchrec_eval``).

``torchrec-eval evaluate RUN QRELS [-m ndcg@10 map@100 recall@20 | -m P.5,10 ndcg_cut.10 ...]
[--convention trec] [-q] [-c] [-l LEVEL] [-M DOCS] [--json] [--per-query FILE]`` evaluates a TREC run
file against TREC qrels (string ids), or saved tensors (``.pt`` / ``.npz``: scores and relevance, or
ranked ids and target ids), and prints a table, or trec_eval's output under ``--convention trec``.

With ``--convention trec`` on TREC files, trec_eval's measures (``torchrec_eval.trec.measures``) are
computed with numpy alone: torch is not imported, which is most of the command's start-up time.
``torchrec-eval evaluate RUN QRELS --convention trec`` prints what ``trec_eval QRELS RUN`` prints.

``torchrec-eval demo`` trains a small BPR-MF recommender on the embedded synthetic data for a few
epochs, prints the metrics after each epoch and writes a PNG plot (needs matplotlib).

The modules: ``command`` (:func:`main`), ``parser`` (the arguments), ``evaluate`` (the sub-command,
``arguments``: trec_eval's ways with them), its two paths ``library`` (the library's metrics: ``names``,
``suite``, ``inputs``) and ``trec_eval`` (trec_eval's measures and formats: ``trec_files``), ``output``,
``paths`` (input files checked, output files refused before the work or written whole), ``progress``
(:func:`progress_factory`), ``demo`` and ``errors`` (the one error path: one line on stderr, exit status 2).
"""

from torchrec_eval.cli.command import main
from torchrec_eval.cli.parser import CONVENTIONS
from torchrec_eval.cli.progress import progress_factory

__all__ = ["main", "progress_factory", "CONVENTIONS"]
