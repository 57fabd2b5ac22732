"""``python -m torchrec_eval ...``: the ``torchrec-eval`` command (see :mod:`torchrec_eval.cli`)."""

import sys

from torchrec_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
