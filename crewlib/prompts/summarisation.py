"""SQ2E's prompts (crewlib.sq2e) and those of its baselines Direct Generation and HERA."""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# SQ2E (crewlib.sq2e): expert–editor stepwise questioning for long-document summarisation, and its
# baselines Direct Generation and HERA. Questions come from crewlib.sq2e.bank; passages from
# crewlib.sq2e.evidence (the document's parts most relevant to the question, never a silent cut).
SUMMARY_WRITER_SYSTEM = (
    "You summarise long scientific documents faithfully. Use only what the document says; never invent numbers, "
    "names or findings."
)

SECTION_SUMMARY = """Document: {title}

Section "{name}" of the document:
{text}

Summarise this section in at most {words} words ({sentences} sentences at most): its main points, with the \
numbers that matter. Answer with the summary text only."""

AGGREGATE_SUMMARY = """Document: {title}

Summaries of its parts, in document order:
{parts}

Condense them into one summary of the whole document in at most {words} words ({sentences} sentences at most), \
in the style of an abstract: the problem, the method, the main results with their numbers, and the conclusion. Do \
not copy the summaries of the parts. Answer with the summary text only, without a heading."""

DIRECT_SUMMARY = """Document: {title}

{text}

Summarise the document in at most {words} words ({sentences} sentences at most), in the style of an abstract: \
the problem, the method, the main results with their numbers, and the conclusion. Answer with the summary text \
only, without a heading."""

HERA_TOPIC_SUMMARY = """Document: {title}

Passages of the document on one topic, in document order:
{text}

Summarise what these passages say in at most {words} words ({sentences} sentences at most), keeping the numbers \
that matter. Answer with the summary text only."""

QUESTION_PLAN = """You are the {role} reviewing a summary of a long document{title_part}.

Summary:
{summary}

Question bank ({kind}; id: question):
{bank}

Choose up to {n} questions to ask the writer, most useful first: those whose answers are most likely to improve \
this summary. Answer with their ids in order."""

EXPERT_ANSWER = """Document: {title}

Passages of the document most relevant to the question:
{evidence}

Current summary:
{summary}

The expert asks: {question}

Answer the question from the passages in 1 to 3 sentences. Then, as "missing", write the one fact from the \
passages that the current summary lacks or gets wrong on this question, as a sentence that could go into the \
summary (with its numbers); write "" if the summary already covers it correctly."""

EDITOR_ANSWER = """Document: {title}

Passages of the document most relevant to the question:
{evidence}

Current summary:
{summary}

The editor asks (yes or no): {question}

Answer "yes" or "no" from the passages and the summary, and explain in one sentence, naming what is wrong when \
the answer is "yes"."""

REVISE_SUMMARY = """Document: {title}

Passages of the document:
{evidence}

Current summary:
{summary}

{change}

Write the revised summary: the current summary with this change made and everything else that is correct kept, \
at most {words} words ({sentences} sentences at most). Answer with the complete revised summary only: no heading, \
no question, no comment."""

REVISE_CHANGE = {  # what a revision is asked to do, by the role whose question called for it
    "expert": "Add this to the summary, or correct the summary with it: {answer}",
    "editor": "Fix this problem of the summary: {answer}",
}

COMPARE_SUMMARIES = """Two summaries of the same document.

Passages of the document:
{evidence}

Summary A:
{a}

Summary B:
{b}

Which summary is better: more complete, coherent and relevant, and consistent with the passages? Give a \
one-sentence reason, then the better one as "better": exactly "A" or exactly "B"."""

FACT_CHECK = """Passages of a document:
{evidence}

A sentence from a summary of this document: {sentence}

Is the sentence consistent with the passages? First give a one-sentence reason, then the label: "entailment" if \
the passages state or clearly imply it, "contradiction" if they say otherwise, "neutral" if they do not say."""
