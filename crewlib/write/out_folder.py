"""The output folder of ``crew write``: checked before any work, held by one run at a time, its previous section kept
until the new one is written.

- **One run at a time.** :func:`prepare_out` creates ``.crew-write.lock`` in the folder (holding the process id)
  before it looks at anything else; a second run on the same folder — also one started while the first was still
  creating it — is refused with the first's process id, never mixed with it. A lock whose process is gone (a run
  killed) is taken over.
- **``--force`` replaces only on success.** A previous run's files (:data:`OUTPUT_FILES`) are moved aside into
  ``.crew-previous/``, not deleted: :meth:`OutputFolder.finish` drops them once the new section is written,
  :meth:`OutputFolder.abandon` (a failed or interrupted run) puts them back. A run killed between the two leaves
  them aside; the next run on the folder puts them back first.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from crewlib import CrewError

OUTPUT_FILES = ("related_work.md", "related_work.tex", "generation.json", "trace.json", "ledger.csv",
                "summary.json")
LOCK = ".crew-write.lock"
ASIDE = ".crew-previous"


class OutputFolderError(CrewError, ValueError):
    """An output folder that cannot be used (a file, not writable, another run's, holding files)."""


@dataclass
class OutputFolder:
    path: Path
    created: bool  # this run created the folder

    def finish(self) -> None:
        """The new section is written: drop the previous run's files set aside, release the folder."""
        shutil.rmtree(self.path / ASIDE, ignore_errors=True)
        self._release()

    def abandon(self) -> None:
        """The run failed: put the previous run's files back (a folder this run created, left empty, is removed),
        release the folder."""
        _restore(self.path)
        self._release()
        if self.created and self.path.is_dir() and not any(self.path.iterdir()):
            shutil.rmtree(self.path, ignore_errors=True)

    def _release(self) -> None:
        lock = self.path / LOCK
        if _holder(lock) == os.getpid():
            lock.unlink(missing_ok=True)


def prepare_out(out: str | Path, *, force: bool = False) -> OutputFolder:
    """The output folder, checked and held before any work (module docstring): creatable and writable, not a
    file, not another run's; one that holds files is refused unless ``force``, which sets the previous run's files
    aside (:data:`OUTPUT_FILES`; nothing else is touched)."""
    if str(out).strip() == "":
        raise OutputFolderError("the output folder (out, --out) is empty: name a folder for the section "
                                "(default: related_work)")
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise OutputFolderError(f"the output folder {path} is a file, not a folder")
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
        _lock(path)
    except OSError as exc:
        raise OutputFolderError(f"the output folder {path} is not writable: {exc.strerror or exc}") from None
    folder = OutputFolder(path, created)
    try:
        _restore(path)  # a run killed after setting the previous section aside
        held = sorted(p.name for p in path.iterdir() if p.name not in (LOCK, ASIDE))
        if held and not force:
            raise OutputFolderError(f"the output folder {path} already holds {len(held)} files ("
                                    f"{', '.join(held[:4])}{' ...' if len(held) > 4 else ''}); replace a previous "
                                    "run's files (--force, force=True), or choose another folder")
        ours = [name for name in held if name in OUTPUT_FILES]
        if ours:
            (path / ASIDE).mkdir(exist_ok=True)
            for name in ours:
                os.replace(path / name, path / ASIDE / name)
    except BaseException:
        folder.abandon()
        raise
    return folder


def _lock(path: Path) -> None:
    """Create the folder's lock for this process; refuse when a live process holds it (a dead one's is taken)."""
    lock = path / LOCK
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            holder = _holder(lock)
            if holder is not None and _alive(holder):
                raise OutputFolderError(f"the output folder {path} is being written by another crew write "
                                        f"(process {holder}); wait for it to finish, or choose another "
                                        "folder") from None
            lock.unlink(missing_ok=True)  # its process is gone
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{os.getpid()}\n")
        return
    raise OutputFolderError(f"the output folder {path}: its lock {LOCK} could not be taken")


def _holder(lock: Path) -> int | None:
    try:
        return int(lock.read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _restore(path: Path) -> None:
    """Move the files set aside back where they were (over any file a failed run left)."""
    aside = path / ASIDE
    if not aside.is_dir():
        return
    for saved in aside.iterdir():
        os.replace(saved, path / saved.name)
    shutil.rmtree(aside, ignore_errors=True)
