"""The top-k families: one module per group of families that compute alike (counts of hits, reciprocal ranks,
discounted gains, ...), each family in it as its formula, its registry entry, its class and its function.

Importing this package registers every family in :data:`~torchrec_eval.ranking.registry.REGISTRY`, which it
re-exports: read the table from here, where it is complete. Its modules
are found, not listed, so that a new family is its module and one import line in each public index
(``torchrec_eval`` and ``torchrec_eval.functional``), and nothing else.
"""

import importlib
import pkgutil

from torchrec_eval.ranking.registry import REGISTRY

__all__ = ["REGISTRY"]

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
