"""CREW: multi-agent reinforcement learning for related-work generation, and SQ2E for long-document summarisation.

The layers (docs/architecture.md): ``actions``, ``text``, ``citations`` and ``data`` at the bottom; ``llm`` (one
client, the embedded model), ``prompts``; the environment ``env`` and the controller ``rl``; the systems
``baselines`` and ``sq2e``; ``eval``; ``experiments`` (what the notebooks run); ``write`` and ``cli`` (a user's
own paper) at the top.
"""

import warnings

__version__ = "0.1.0"

# tqdm.auto, imported by transformers, sentence-transformers and datasets, warns once per process in a notebook that
# the widget package is missing and falls back to text bars; which library imports it first depends on what a run
# resumes, so the warning (stderr in a notebook's output) is silenced here, before any of them is imported.
warnings.filterwarnings("ignore", message="IProgress not found")


class CrewError(Exception):
    """The base of every error the project raises on purpose: a bad input, an unusable endpoint, a missing model or
    controller, a locked output folder. Each subclass also derives from ``ValueError`` (bad input) or
    ``RuntimeError`` (a failure of the run), so ``except CrewError`` catches every one and nothing else."""
