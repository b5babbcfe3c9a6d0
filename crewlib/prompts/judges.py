"""The evaluation's prompts (crewlib.eval): the judge and its rubrics, entailment, the pairwise judge, RWGBench.

Versioned apart from the agents' prompts (``EVAL_PROMPT_VERSION``) so that changing a rubric re-asks the judges
without invalidating recorded agent answers."""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# Evaluation (crewlib.eval). Versioned apart from the agents' prompts so that changing a rubric
# re-asks the judges without invalidating recorded agent answers.
EVAL_PROMPT_VERSION = "2026-12-02.e2"

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

NLI_SYSTEM = (
    "You check scientific citations: whether a cited paper's abstract supports what a sentence says about it. "
    "Answer with a single JSON object."
)

NLI = """Cited paper (title and abstract):
{premise}

Sentence citing it: {hypothesis}

Is the sentence's claim about the cited paper supported by the abstract? First give a one-sentence reason, then \
the label: "entailment" if the abstract states or clearly implies the claim (a paraphrase or a copy counts), \
"contradiction" if the abstract says the opposite, "neutral" if the abstract does not say."""

# The pairwise judge of the instrument (crewlib.eval.instrument): two sections of one paper, asked in both orders.
PAIRWISE_SYSTEM = (
    "You are an expert reviewer of scientific writing. You compare two related-work sections written for the "
    "same paper, explain your choice briefly, and answer with a single JSON object."
)

PAIRWISE_CRITERIA = {
    "coverage": "covers more of the key prior works the paper builds on, each described accurately",
    "logic": "is better organised: works grouped by theme, each sentence following from the one before, no "
             "repeated content, no sentence cut off",
    "relevance": "relates the cited works more closely to the target paper's problem, and each citation supports "
                 "what its sentence says",
    "overall": "a reviewer would rather accept: accurate citations that say what the cited works say, coverage of "
               "the key works, a clear order, no repetition, no text copied in the cited authors' first person",
}

PAIRWISE = """Target paper: {title}
{abstract}

Papers the sections may cite (key: title):
{references}

Section A:
\"\"\"
{a}
\"\"\"

Section B:
\"\"\"
{b}
\"\"\"

Which section {criterion}? Give a one-sentence reason, then "A" or "B"."""

# RWGBench's judge score (crewlib.eval.rwgbench): its own four dimensions, prompt and rubrics.
RWGBENCH_JUDGE = """Grade the {dimension} of the related-work section below on a 1-5 scale.

Rubric for {dimension}:
{rubric}

Target paper: {title}
{abstract}

Related-work section:
\"\"\"
{text}
\"\"\"

Give a one- or two-sentence rationale, then the integer score from 1 to 5."""

RWGBENCH_RUBRICS = {
    "coherence": """5: every sentence follows from the one before; ideas connect into one consistent account.
4: coherent overall, with one or two abrupt jumps.
3: partly coherent; several sentences do not connect to their neighbours.
2: mostly disconnected statements.
1: incoherent or self-contradictory.""",
    "organisation": """5: works are grouped into clear themes, in a sensible order, with paragraphs that each have one \
purpose.
4: clear grouping with small problems of order or paragraphing.
3: some grouping, but themes are mixed or the order is arbitrary.
2: little grouping; papers are listed one after another.
1: no discernible organisation.""",
    "fluency": """5: grammatical, natural and easy to read throughout.
4: fluent with a few awkward phrases.
3: readable, with noticeable grammatical or word-choice errors.
2: frequent errors that slow reading.
1: hard to read.""",
    "academic_style": """5: the register of a published paper: precise terms, objective tone, citations woven into \
the prose.
4: academic with occasional informal or vague wording.
3: mixed register; some informal, promotional or vague passages.
2: mostly informal or conversational.
1: not academic writing.""",
}

ALTERNATIVE_SYSTEM = (
    "You compare two scientific papers for a related-work section: whether one could be cited in place of the "
    "other. Answer with a single JSON object."
)

ALTERNATIVE_CITATION = """A paper's authors cited paper A in its related work. A generated related-work section \
cited paper B instead and not A.

The paper: {title}

Paper A (cited by the authors): {cited}

Paper B (cited instead): {alternative}

Is B a topically compatible alternative to A: does it address the same topic, so that it could serve the same \
purpose in this paper's related work? First give a one-sentence reason, then "yes" or "no"."""

CITATION_FUNCTION = """What is the function of this sentence from a related-work section, with respect to the \
works it cites?
- motivation: the cited work motivates the problem the paper addresses
- background: general background or context
- uses: the paper uses a method, dataset or tool of the cited work
- extends: the paper extends or builds on the cited work
- similarities: the cited work is similar to the paper
- differences: the cited work differs from or is contrasted with the paper
- future_work: the cited work points to open problems or future directions

Sentence: {sentence}

Answer with the one function that fits best."""
