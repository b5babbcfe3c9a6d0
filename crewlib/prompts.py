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

# ---------------------------------------------------------------------------------------------
# Evaluation (crewlib.eval). Versioned apart from the agents' prompts so that changing a rubric
# re-asks the judges without invalidating recorded agent answers.
EVAL_PROMPT_VERSION = "2026-12-02.e1"

JUDGE_SYSTEM = (
    "You are an expert reviewer of scientific writing. You grade a related-work section against a written "
    "rubric, explain your grade briefly, and answer with a single JSON object."
)

JUDGE = """Grade the {dimension} of the related-work section below on a 1-5 scale.

Rubric for {dimension}:
{rubric}

Target paper: {title}
{abstract}

Papers the section may cite (key: title):
{references}

Related-work section:
\"\"\"
{text}
\"\"\"

Give a one- or two-sentence rationale, then the integer score from 1 to 5."""

# Coverage follows the paper's Appendix C.1; Logic and Relevance are written in the same form.
# The MA-RWG text-quality dimensions (clarity ... critics) share the judge and its scale.
RUBRICS = {
    "coverage": """5: covers all the key prior works and research directions the target builds on, each described \
accurately.
4: covers most key works and directions; one minor work or aspect is missing.
3: covers the main direction but misses several important works or aspects.
2: covers only a few works; major directions relevant to the target are missing.
1: covers almost none of the relevant prior work, or describes works that are not relevant.""",
    "logic": """5: well organised; works are grouped by theme, transitions are clear, and the section builds a \
coherent argument that leads to the target's contribution.
4: mostly well organised with clear grouping; one or two weak transitions.
3: some grouping, but the order is partly arbitrary or the argument is hard to follow in places.
2: mostly a list of summaries with little connection between them.
1: incoherent, repetitive or contradictory.""",
    "relevance": """5: every sentence relates the cited work to the target paper's problem or method, and the \
differences to the target are made clear.
4: nearly all content is relevant; the link to the target is sometimes implicit.
3: relevant overall, but some content is generic or only loosely connected to the target.
2: much of the content is off-topic or never connected to the target.
1: unrelated to the target paper.""",
    "clarity": """5: precise, fluent and easy to read; terms are used correctly.
4: clear with minor awkward phrasing.
3: understandable, with some vague or clumsy sentences.
2: often unclear or ungrammatical.
1: very hard to understand.""",
    "structure": """5: a clear structure (topics or paragraphs) with a logical order and smooth transitions.
4: clear structure with small ordering problems.
3: some structure, but grouping or order is weak.
2: little structure; a sequence of unrelated statements.
1: no discernible structure.""",
    "motivation": """5: clearly explains why the target paper is needed, by the gap the prior works leave.
4: states the motivation with minor gaps.
3: motivation is implicit or generic.
2: motivation is barely present.
1: no motivation for the target paper.""",
    "critics": """5: critically compares prior works, naming their limitations and how the target differs.
4: some critical comparison with a few specific limitations.
3: mostly descriptive with occasional generic criticism.
2: purely descriptive summaries.
1: no comparison or evaluation of prior work at all.""",
}

NLI = """Premise (the cited paper):
{premise}

Hypothesis (a sentence citing it): {hypothesis}

Does the premise support the hypothesis's claim about the cited paper? Answer "entailment" if it is supported, \
"neutral" if the premise neither supports nor contradicts it, "contradiction" if the premise contradicts it."""

CITATION_FUNCTION = """Classify the function of each numbered sentence of a related-work section with respect to \
the works it cites. Functions:
- motivation: the cited work motivates the problem the paper addresses
- background: general background or context
- uses: the paper uses a method, dataset or tool of the cited work
- extends: the paper extends or builds on the cited work
- similarities: the cited work is similar to the paper
- differences: the cited work differs from or is contrasted with the paper
- future_work: the cited work points to open problems or future directions

Sentences:
{sentences}

Give one function per sentence, in order, as a list with exactly {n} items."""
