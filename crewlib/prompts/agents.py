"""The CREW agents' prompts (the LLM executor's four roles) and the rules every system's section follows."""

from __future__ import annotations

# The editions of the agents' and the systems' prompts (``llm.prompt_edition``). The edition is part of the cache key,
# so answers recorded for one wording are never replayed for another. "2026-12-03.4": the section rules forbade any
# sentence on the target paper (the notebooks' shipped answers were recorded with it, params/recorded.yaml, until
# they are recorded again); "2026-12-06.1": the works are related to the target paper (docs/method.md, "Positioning").
RECORDED_EDITION = "2026-12-03.4"
CURRENT_EDITION = "2026-12-06.1"
EDITIONS = (RECORDED_EDITION, CURRENT_EDITION)
PROMPT_VERSION = RECORDED_EDITION  # the edition of prompts that exist in one wording only (cache key as before)

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

# The rules every system's section follows (CREW's Compose and Revise, and every baseline's write).
SECTION_RULES_RECORDED = (
    "Write in the third person about the cited works (their authors' \"we\" becomes \"the authors\" or the "
    "method's name). Cite every claim with its key in square brackets, e.g. [R2] or [R1, R4], using only the keys "
    "given; never cite by title or author name. A work known by its title only may be cited for what its title "
    "says, nothing more. Do not describe the target paper as related work, and do not mention drafts, notes, "
    "feedback or these instructions. Write complete sentences."
)

# Since edition 2026-12-06.1: relate the works to the target paper, never present the paper as related work.
SECTION_RULES_RELATING = (
    "Write in the third person about the cited works (their authors' \"we\" becomes \"the authors\" or the "
    "method's name). Cite every claim about a work with its key in square brackets, e.g. [R2] or [R1, R4], using "
    "only the keys given; never cite by title or author name. A work known by its title only may be cited for what "
    "its title says, nothing more. Never describe the target paper as related work, but do relate the works to it: "
    "a sentence on the paper itself starts with \"This paper\" and says how it builds on the works, differs from "
    "them or addresses what they leave open, stating only what the paper's own title, abstract or introduction "
    "says. Do not mention drafts, notes, feedback or these instructions. Write complete sentences."
)
SECTION_RULES = {RECORDED_EDITION: SECTION_RULES_RECORDED, CURRENT_EDITION: SECTION_RULES_RELATING}

COMPOSE = """You are writing the related-work section of the paper "{topic}": {abstract}

The section so far, one line per paragraph (the works it cites):
{outline}

Works the section does not cite yet, with notes:
{knowledge}

Write ONE new paragraph ({sentences} sentences, at most {words} words) about these works only, {keys}. Open with the \
theme they share, name each work's method where you cite it, say how they differ, and end with one sentence on \
how they bear on this paper's problem. {rules} Answer with segment_id null, the paragraph as \
text, and your confidence (0 to 1)."""

# Compose with ``executor.compose_form: sentences``: the answer is a list of (key, sentence) pairs, so that every
# sentence cites the work it is about by construction (the key is a field the decoder can only fill with a key given).
COMPOSE_SENTENCES = """You are writing the related-work section of the paper "{topic}".

The section so far, one line per paragraph (the works it cites):
{outline}

Works the section does not cite yet, with notes:
{knowledge}

Write ONE new paragraph about these works only, {keys}, as a list of sentences: for each work, one or two \
sentences in your own words on what it does or finds, taken from its notes, each given with that work's key; \
order the works so that related ones follow each other. Say only what the notes of a sentence's own work say. \
{rules} Answer with the sentences and your confidence (0 to 1)."""

# Compose with ``executor.compose_form: themed`` (edition 2026-12-06.1): one theme a paragraph, its parts fields of the
# answer's schema (crewlib.env.themed_compose). What is fixed for a paper comes first (its own text), what changes last.
COMPOSE_THEMED = """You are writing the related-work section of the paper "{topic}".

The paper in its own words (title, abstract, introduction):
{paper}

The section so far, one line per paragraph (the works it cites):
{outline}

Works of one theme that the section does not cite yet, with notes:
{knowledge}

Write ONE paragraph on this theme, about these works only, {keys}:
- theme: the theme the works share, in 2 to 6 words;
- topic: the paragraph's opening sentence: a whole sentence with a verb that introduces the theme, without \
citations;
- works: for each key, one or two sentences in your own words on what that work does or finds, taken from its \
notes;
{comparison}- relation: builds_on, differs or addresses_gap: how the paper stands to these works;
- position: the closing sentence, starting "This paper", on how the paper builds on these works, differs from \
them or addresses what they leave open, saying only what the paper's own text above says about it.
{rules} Answer with these fields and your confidence (0 to 1)."""

# The comparison line of COMPOSE_THEMED, for a theme of two works or more.
COMPOSE_COMPARISON = """- comparison: one sentence that compares two or more of these works or says what they \
share, naming each by its key in square brackets, only what their notes say; comparison_keys: the keys it names;
"""

REVISE = """You are writing the related-work section of the paper "{topic}".

Paragraph {segment_id} of the related-work section:
{text}

Problems found in it (feedback id in brackets):
{problems}

Notes on the works it cites:
{knowledge}

Rewrite paragraph {segment_id} so that every problem above is fixed: remove repeated or off-topic sentences, \
keep the citations that are right, at most 100 words. {rules} Answer with \
segment_id {segment_id}, the rewritten paragraph as text, the feedback ids you fixed as resolves, and your \
confidence (0 to 1)."""

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
