"""CREW: multi-agent reinforcement learning for related-work generation, and SQ2E for long-document summarisation.

The layers (docs/architecture.md): ``actions``, ``text``, ``citations`` and ``data`` at the bottom; ``llm`` (one
client, the embedded model), ``prompts``; the environment ``env`` and the controller ``rl``; the systems
``baselines`` and ``sq2e``; ``eval``; ``experiments`` (what the notebooks run); ``write`` and ``cli`` (a user's
own paper) at the top.
"""

__version__ = "0.1.0"


class CrewError(Exception):
    """The base of every error the project raises on purpose: a bad input, an unusable endpoint, a missing model or
    controller, a locked output folder. Each subclass also derives from ``ValueError`` (bad input) or
    ``RuntimeError`` (a failure of the run), so ``except CrewError`` catches every one and nothing else."""
