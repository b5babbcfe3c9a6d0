"""One writer per output folder: a second process on the same folder refuses with a clear message.

Two runs appending to one ``generations.jsonl`` would write every pair twice and pay every call
twice. :func:`output_lock` takes an exclusive ``flock`` on ``<folder>/.lock`` (released by the
kernel when the process ends, even on SIGKILL, so a crash never leaves a stale lock) and
records the holder's PID in the file for the message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from crewlib import CrewError


class OutputLockedError(CrewError, RuntimeError):
    """Another process is writing to this output folder."""


@contextlib.contextmanager
def output_lock(folder: str | os.PathLike) -> Iterator[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".lock"
    fh = path.open("a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise OutputLockedError(
                f"{folder} is being written by {holder} (lock {path}); wait for that run to finish, "
                "or give this run another output folder"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"process {os.getpid()}")
        fh.flush()
        yield path
    finally:
        fh.close()
