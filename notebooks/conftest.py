"""Which notebooks ``pytest --nbval notebooks`` executes (strict: each stored output compared), and what it says
about the others.

A notebook whose quick-mode LLM answers are still being recorded cannot run in replay mode (a
missing answer is an error, by design), so it is listed in ``RECORDING`` with its state until
its recording is complete and shipped in ``notebooks/llm_cache/``; the run's header names each
one, so a notebook is never left out silently. Record one with its module's command line
(``python -m crewlib.experiments.main_results`` for 05, ``... .multinews`` 07, ``... .ablations`` 08,
``... .sq2e`` 10) or by running it with ``cache_mode read_write``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

RECORDING: dict[str, str] = {}  # notebook file → why it is not executed yet (none: every notebook replays)
collect_ignore = list(RECORDING)


def pytest_configure(config):
    """Under ``--nbval`` the notebooks write their figures to a folder of this run (``$CREW_FIGURES_DIR``, which
    their kernels inherit), not to ``figures/``: checking them rewrites no tracked file (a PNG's bytes, a replay's
    wall time), and ``test_recorded_results.py`` reads what they wrote in this run."""
    if config.getoption("nbval", False) or config.getoption("nbval_lax", False):
        folder = Path(tempfile.mkdtemp(prefix="crew-nbval-")) / "figures"
        folder.mkdir()
        os.environ["CREW_FIGURES_DIR"] = str(folder)


def pytest_report_header(config):
    return [f"notebook not executed: {name} — {why}" for name, why in RECORDING.items()]
