"""The command's name, its user errors, and the one way a failure reaches the user."""

from __future__ import annotations

import sys

PROG = "torchrec-eval"


class CliError(Exception):
    """A user error: printed as ``torchrec-eval: error: ...`` with exit status 2."""


def report_error(message: object, prog: str = PROG) -> int:
    """Print ``PROG: error: MESSAGE`` as ONE line on stderr and return the exit status, 2.

    Every failure goes through here (argparse's, :class:`CliError`, an unreadable or unwritable file), so
    a script reading stderr sees one line per failure: a library's multi-line message is joined."""
    text = " ".join(line.strip() for line in str(message).splitlines() if line.strip())
    print(f"{prog}: error: {text}", file=sys.stderr)  # stderr escapes what its encoding lacks: never fails
    return 2


def os_error_message(error: OSError) -> str:
    """``PATH: problem`` of an OSError (its own text repeats the errno and quotes the path)."""
    problem = error.strerror or str(error)
    if error.filename is None:
        return problem
    return f"{error.filename}: {problem}"
