"""Moved to :mod:`torchrec_eval.pipeline.validation` (plain arguments: :mod:`torchrec_eval.pipeline.arguments`,
``count_true``: :mod:`torchrec_eval.pipeline.counting`);
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.arguments import as_int, check_int, check_optional_int, check_probability, is_int
from torchrec_eval.pipeline.counting import count_true
from torchrec_eval.pipeline.validation import (
    Checks,
    as_long,
    check_finite,
    check_flat_shapes,
    check_groups_shape,
    check_id_range,
    check_scores,
    check_target_values,
    check_unique_ids,
    describe,
    describe_any,
    require_float,
    require_ids,
    require_nonempty,
    require_tensor,
)

__all__ = [
    "Checks",
    "as_int",
    "as_long",
    "check_finite",
    "check_flat_shapes",
    "check_groups_shape",
    "check_id_range",
    "check_int",
    "check_optional_int",
    "check_probability",
    "check_scores",
    "check_target_values",
    "check_unique_ids",
    "count_true",
    "describe",
    "describe_any",
    "is_int",
    "require_float",
    "require_ids",
    "require_nonempty",
    "require_tensor",
]
