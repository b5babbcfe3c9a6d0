"""Every prompt the project sends, in one place, with a version.

Bump ``PROMPT_VERSION`` when a template changes: it is part of the cache key, so answers
recorded for an older wording are never replayed for the new one.
"""

from __future__ import annotations

PROMPT_VERSION = "2026-12-02.4"

# ---------------------------------------------------------------------------------------------
# CREW agent roles (the LLM executor). Each asks for one JSON object; schemas in crewlib.env.llm_executor.
AGENT_SYSTEM = (
    "You are one of several agents writing the related-work section of a scientific paper together in a shared "
    "workspace. References are identified by keys such as [R3]. Use only the keys you are given, never invent "
    "facts or references, and always answer with a single JSON object."
)

RETRIEVE = """Target paper: {title}
{abstract}

You are reading reference [{key}] {ref_title}:
{ref_abstract}

Extract 1 to 3 findings of [{key}] that matter for the target paper's related work. Each note is one sentence \
in your own words. Give your confidence (0 to 1) that these notes are accurate and useful."""

DISSEMINATE = """Target paper: {title}

Your notes, not yet shared with the team:
{notes}

Condense them into at most 3 notes for the team's shared knowledge: merge duplicates, keep each note one \
sentence, and end every note with the key(s) of its source in square brackets, e.g. "... [R2]". Give your \
confidence (0 to 1)."""

COMPOSE = """Target paper: {title}

Knowledge available to you (with source keys):
{knowledge}

Current draft paragraphs (id: text):
{draft}

Open feedback (id, kind, paragraph: text):
{feedback}

Write ONE paragraph of the related-work section (2 to 4 sentences) about the works in the knowledge above, \
not about the target paper itself. Either write a new paragraph (segment_id null) on knowledge the draft does \
not cover yet, or revise an existing paragraph (its segment_id) to \
fix open feedback, listing the feedback ids you resolve. Every sentence must cite its source with keys such as \
[R2] or [R1, R4]; use only keys from the knowledge above. Give your confidence (0 to 1)."""

CRITIQUE = """Target paper: {title}

Valid reference keys: {keys}

Knowledge of the team (with source keys):
{knowledge}

Draft paragraphs (id: text):
{draft}

Review the draft against the knowledge. Report up to 4 problems, each with a kind (hallucinated_citation: a \
key that is invalid or does not support the sentence; missing_evidence: a claim no knowledge supports; \
inconsistency: contradictions or repetition; coverage_gap: important knowledge not in the draft, segment_id \
null; style: unclear or uncited writing), the paragraph's segment_id, and a short explanation. Report an empty \
list if the draft is fine. Give your confidence (0 to 1)."""
