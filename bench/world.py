"""World: the lifecycle a benchmark's world shares with the others (:class:`bench.env.BenchEnv`,
:class:`bench.scale.server.ScaleServer`), so a failed start cleans up exactly as an exit does."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self


class World:
    """A context manager owning a scratch directory and an exit stack.

    ``__enter__`` runs :meth:`_start`, which enters what the world runs on ``self._stack``; when it fails, and at
    exit, :meth:`close` unwinds the stack and then deletes the directory (unless ``keep``).

    Args:
        prefix: The scratch directory's name prefix.
        base_dir: Where the scratch directory goes (default: the system's temporary directory).
        keep: Leave the scratch directory for inspection.
    """

    def __init__(self, *, prefix: str, base_dir: Path | None = None, keep: bool = False) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix=prefix, dir=base_dir))
        self._keep = keep
        self._stack = contextlib.ExitStack()

    def _start(self) -> None:
        """Start what the world runs (each part's stop on ``self._stack``)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop everything and delete the scratch directory (unless ``keep``)."""
        self._stack.close()
        if not self._keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
