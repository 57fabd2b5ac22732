"""Moved to :mod:`torchrec_eval.pipeline.forms.ids`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.forms.ids import (
    check_target_ids,
    ids_ranked,
    lookup,
    read_found,
    table_ranked,
    target_table,
)

__all__ = ["check_target_ids", "ids_ranked", "lookup", "read_found", "table_ranked", "target_table"]
