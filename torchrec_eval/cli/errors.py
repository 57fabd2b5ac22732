"""The command's name and its user errors."""

from __future__ import annotations

PROG = "torchrec-eval"


class CliError(Exception):
    """A user error: printed as ``torchrec-eval: error: ...`` with exit status 2."""
