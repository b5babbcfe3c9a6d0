"""The LLM annotators of notebook 09 (crewlib/experiments/human_eval.py): the annotators' own sheet, read by a model."""

from __future__ import annotations

# LLM annotators of notebook 09 (crewlib/experiments/human_eval.py): the annotators' own sheet, read by a model
PAIR_ANNOTATOR_SYSTEM = (
    "You are an annotator comparing two related-work sections written for the same scientific paper. "
    "You do not know who wrote them. Judge only what is written."
)
PAIR_ANNOTATOR = """The paper:
{context}

Text 1:
{text_1}

Text 2:
{text_2}

Answer each question with "1" (text 1 is better), "2" (text 2 is better) or "tie".
{questions}
Answer as JSON with the keys {keys}."""
