"""Execute the notebooks in place, as they ship: ``python -m crewlib.notebook_run [NN ...]`` (``make notebooks``).

Each notebook runs with papermill from the project root, replaying the recorded answers
(``CREW_LLM_CACHE_MODE=replay``: a missing answer stops it with an error naming the request), and keeps its outputs
in the file, so a reader on a code host or in JupyterLab sees every table and figure. The run folders it would
resume from are emptied first (``--keep-runs`` keeps them), so what ships is computed from the recorded answers
alone. Afterwards what differs from run to run without being a result is removed — papermill's and the kernel's
timestamps in the metadata — so a rerun that reproduces the results leaves the files unchanged, and
``pytest --nbval notebooks`` (strict, ``make test``) fails on a changed number, naming the notebook and cell.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import nbformat

from crewlib.config import PROJECT_ROOT, load_params, resolve_path
from crewlib.schema import Params

NOTEBOOKS = PROJECT_ROOT / "notebooks"
VOLATILE_CELL_METADATA = ("execution", "papermill")  # timestamps and durations of this run


def notebook_paths(selected: Sequence[str] = ()) -> list[Path]:
    """The notebooks whose number or name starts with one of ``selected`` (all ten when empty)."""
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    chosen = [p for p in paths if not selected or any(p.name.startswith(s) for s in selected)]
    unknown = [s for s in selected if not any(p.name.startswith(s) for p in paths)]
    if unknown:
        raise SystemExit(f"no notebook named {unknown}; known: {[p.stem for p in paths]}")
    return chosen


def run_folders(params: Params, paths: Sequence[Path]) -> list[Path]:
    """The folders the given notebooks resume from (generations, trainings, packets)."""
    out = Path(params.notebooks.out_dir)
    by_number = {"04": [params.training.out_dir], "05": [out / "05_main_results"],
                 "06": [params.transfer.out_dir], "07": [params.multinews.out_dir],
                 "08": [params.ablations.out_dir], "09": [out / "09_human_eval"],
                 "10": [params.sq2e.out_dir]}
    return [resolve_path(f) for p in paths for f in by_number.get(p.name[:2], [])]


def strip_volatile(path: Path) -> None:
    """Remove the run's timestamps from a notebook's metadata (its outputs stay)."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
    nbformat.write(nb, path)


def execute(path: Path) -> float:
    """Run one notebook in place (replaying the recorded answers); returns its wall seconds."""
    import papermill

    started = time.monotonic()
    papermill.execute_notebook(str(path), str(path), cwd=str(PROJECT_ROOT), kernel_name="python3",
                               progress_bar=False)
    strip_volatile(path)
    return time.monotonic() - started


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="numbers or names (default: all ten)")
    parser.add_argument("--keep-runs", action="store_true", help="resume from the run folders instead of emptying them")
    args = parser.parse_args(argv)
    os.environ.setdefault("CREW_LLM_CACHE_MODE", "replay")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.pop("MPLBACKEND", None)  # the notebook's own backend: figures shown inline and saved
    paths = notebook_paths(args.notebooks)
    if not args.keep_runs:
        for folder in run_folders(load_params("quick"), paths):
            shutil.rmtree(folder, ignore_errors=True)
    for path in paths:
        print(f"{path.name} ...", end=" ", flush=True)
        seconds = execute(path)
        print(f"{seconds:.0f} s", flush=True)
    print(f"{len(paths)} notebook(s) executed in place; `git diff notebooks/` shows what changed", file=sys.stderr)


if __name__ == "__main__":
    main()
