"""AUC, GAUC, MPR, FCP and CTR classes and the rating metrics MAE, MSE, RMSE, re-exported.

The pairwise classes live in :mod:`torchrec_eval.pairwise.metrics`, the rating metrics in
:mod:`torchrec_eval.metrics.rating`; ``FAMILIES`` and ``build_member`` (which suites once read here; they
now read :mod:`torchrec_eval.metrics.families`) are those of :mod:`torchrec_eval.pairwise.member`.
"""

from torchrec_eval.metrics.rating import MAE, MSE, RMSE
from torchrec_eval.pairwise.member import FAMILIES, build_member
from torchrec_eval.pairwise.metrics import AUC, CTR, FCP, GAUC, MPR

__all__ = ["AUC", "CTR", "FCP", "FAMILIES", "GAUC", "MAE", "MPR", "MSE", "RMSE", "build_member"]
