"""``main``: parse the command line, run its sub-command, and turn a user error into exit status 2."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from torchrec_eval.cli.errors import PROG, CliError, os_error_message, report_error
from torchrec_eval.cli.parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 on a user error: one line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)  # its errors: one line and exit status 2 too (parser.OneLineParser)
    if args.command == "demo" and args.items < 2:
        parser.error("--items must be >= 2")
    try:
        status: int = args.handler(args)  # the sub-command's cmd_* function (parser.build_parser)
        return status
    except (CliError, ValueError) as error:
        return report_error(error)
    except OSError as error:  # a file that vanished, or that cannot be read or written
        return report_error(os_error_message(error))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
