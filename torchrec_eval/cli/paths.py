"""The files the command reads and writes: checked before any work, outputs written whole or not at all.

An output is refused before the evaluation starts (a directory, a missing folder, a read-only file or
folder, an input file), then written to a temporary file beside it and moved into place: a failure
half-way never leaves a partial or empty file, and an old file keeps its content."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

from torchrec_eval.cli.errors import CliError

_STREAMS = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/")


def check_input_file(path: str, what: str) -> None:
    """``path`` is a file to read (``what``: "run", "qrels", ...), or a one-line error saying why not."""
    if os.path.isdir(path):
        raise CliError(f"{path}: the {what} is a directory, not a file")
    if not os.path.exists(path):
        raise CliError(f"{path}: no such {what} file")


def check_output_file(path: str, option: str, inputs: Iterable[str | None] = ()) -> None:
    """Refuse now, before any work, an output ``path`` (of ``option``) that could not be written later."""
    if os.path.isdir(path):
        raise CliError(f"{path}: {option} names a directory, not a file")
    if _in_place(path):
        if not os.access(path, os.W_OK):
            raise CliError(f"{path}: {option}: not writable")
        return
    target = os.path.realpath(path)  # a symlink's target is what gets written
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise CliError(f"{path}: {option}: no such directory {folder}")
    if os.path.exists(target):
        if any(source and os.path.exists(source) and os.path.samefile(source, target) for source in inputs):
            raise CliError(f"{path}: {option} would overwrite an input file")
        if not os.access(target, os.W_OK):
            raise CliError(f"{path}: {option}: the file is read-only")
    try:  # the temporary file of written_whole() must be creatable in the folder
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise CliError(f"{path}: {option}: cannot create a file in {folder} ({error.strerror})") from None


@contextmanager
def written_whole(path: str, option: str) -> Iterator[str]:
    """A path to write ``path``'s new content to: a temporary file beside ``path``, moved onto it when the
    block succeeds and removed when it fails. A device, a pipe or an open stream is written in place."""
    if _in_place(path):
        yield path
        return
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    suffix = os.path.splitext(name)[1]  # kept: matplotlib picks the plot's format from it
    try:
        handle, temporary = tempfile.mkstemp(prefix=".torchrec-eval-", suffix=suffix[:16], dir=folder)
    except OSError as error:
        raise CliError(f"{path}: {option}: cannot create a file in {folder} ({error.strerror})") from None
    os.close(handle)
    try:
        yield temporary
        os.chmod(temporary, _mode_of(target))  # mkstemp's 0600, not what a plain open() would have made
        os.replace(temporary, target)
    except OSError as error:
        _remove(temporary)
        if error.filename not in (None, temporary, target):  # another file's error: main() names it
            raise
        # a full disk, a quota, the folder gone: named as the user's file, not the temporary one
        raise CliError(f"{path}: cannot write the {option} file ({error.strerror or error})") from None
    except BaseException:
        _remove(temporary)
        raise


def _in_place(path: str) -> bool:
    """``path`` is written as it is, not replaced: a device or a pipe (/dev/null, a FIFO) cannot be, and
    /dev/stdout, /dev/fd/N lead to an open stream's file: replacing that file would cut the stream off."""
    if os.path.abspath(path).startswith(_STREAMS):
        return True
    return os.path.exists(path) and not os.path.isfile(path)


def write_file(path: str, data: bytes, option: str) -> None:
    """``data`` into ``path``, whole or not at all."""
    with written_whole(path, option) as temporary, open(temporary, "wb") as handle:
        handle.write(data)


def _mode_of(target: str) -> int:
    """The permissions ``target`` has, or a new file would get (0666 less the umask)."""
    with suppress(FileNotFoundError):
        return stat.S_IMODE(os.stat(target).st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _remove(temporary: str) -> None:
    with suppress(FileNotFoundError):
        os.remove(temporary)
