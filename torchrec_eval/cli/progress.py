"""Progress bars on stderr: tqdm's when it is installed, else a minimal line (also the demo's)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any


class NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class LineBar:
    """A minimal stderr progress line for when tqdm is not installed."""

    def __init__(self, total: int, desc: str, unit: str) -> None:
        self.total, self.desc, self.unit, self.n = max(int(total), 1), desc, unit, 0
        self.start = self.last = time.monotonic()
        self._draw()

    def _draw(self) -> None:
        share = min(self.n / self.total, 1.0)
        sys.stderr.write(f"\r{self.desc}: {share:4.0%} ({self.n}/{self.total} {self.unit}, "
                         f"{time.monotonic() - self.start:.1f} s)")
        sys.stderr.flush()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= 0.1 or self.n >= self.total:
            self.last = now
            self._draw()

    def close(self) -> None:
        self._draw()
        sys.stderr.write("\n")
        sys.stderr.flush()


def progress_factory(enabled: bool | None, large: bool = True) -> Callable[..., Any]:
    """A ``progress(total=, desc=, unit=)`` factory of bars on stderr.

    ``enabled``: ``True`` always draws, ``False`` never, ``None`` (auto) only when stderr is a terminal
    and the input is ``large``. Uses tqdm when installed, else a minimal progress line.
    """
    show = enabled if enabled is not None else (large and sys.stderr.isatty())

    def make(total: int, desc: str, unit: str = "it", **kwargs: Any) -> Any:
        if not show:
            return NoBar()
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return LineBar(total, desc, unit)
        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True,
                    mininterval=0.1, **kwargs)

    return make
