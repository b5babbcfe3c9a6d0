"""CREW: multi-agent reinforcement learning for related-work generation.

The package mirrors the paper: ``crewlib.llm`` (one LLM client and the embedded
local model), and later data, graph, environment, RL, baselines, evaluation and SQ2E.
"""

__version__ = "0.1.0"
