"""Every prompt the project sends, in one place, with a version.

Bump ``PROMPT_VERSION`` when a template changes: it is part of the cache key, so answers
recorded for an older wording are never replayed for the new one.
"""

from __future__ import annotations

PROMPT_VERSION = "2026-12-03.4"

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
SECTION_RULES = (
    "Write in the third person about the cited works (their authors' \"we\" becomes \"the authors\" or the "
    "method's name). Cite every claim with its key in square brackets, e.g. [R2] or [R1, R4], using only the keys "
    "given; never cite by title or author name. A work known by its title only may be cited for what its title "
    "says, nothing more. Do not describe the target paper as related work, and do not mention drafts, notes, "
    "feedback or these instructions. Write complete sentences."
)

COMPOSE = """You are writing the related-work section of the paper "{topic}": {abstract}

The section so far, one line per paragraph (the works it cites):
{outline}

Works the section does not cite yet, with notes:
{knowledge}

Write ONE new paragraph ({sentences} sentences, at most {words} words) about these works only, {keys}. Open with the \
theme they share, name each work's method where you cite it, say how they differ, and end with one sentence on \
how they bear on this paper's problem. """ + SECTION_RULES + """ Answer with segment_id null, the paragraph as \
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
""" + SECTION_RULES + """ Answer with the sentences and your confidence (0 to 1)."""

REVISE = """You are writing the related-work section of the paper "{topic}".

Paragraph {segment_id} of the related-work section:
{text}

Problems found in it (feedback id in brackets):
{problems}

Notes on the works it cites:
{knowledge}

Rewrite paragraph {segment_id} so that every problem above is fixed: remove repeated or off-topic sentences, \
keep the citations that are right, at most 100 words. """ + SECTION_RULES + """ Answer with \
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

SOFT_RECALL_NLI = """Related-work text (what it says about the papers it cites):
{premise}

Claim from a reference related-work section about one cited paper: {hypothesis}

Does the text support the claim? First give a one-sentence reason, then the label: "entailment" if the text \
states or clearly implies the claim (a paraphrase counts), "contradiction" if the text says the opposite, \
"neutral" if the text does not say."""

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

# ---------------------------------------------------------------------------------------------
# Single-prompt baselines and SRW (crewlib.baselines.single, crewlib.baselines.srw)
WRITER_SYSTEM = (
    "You write the related-work section of a scientific paper. Cite only with the reference keys you are "
    "given, such as [R3] or [R1, R4]; never invent references or facts."
)

WRITE_SECTION = """Target paper: {title}
{abstract}

{material}

Write the related-work section of the target paper in 2 to 4 paragraphs, at most {words} words. Group the \
works by theme and relate them to the target paper. """ + SECTION_RULES + """ Answer with the section text \
only, without a heading or a preamble."""

SRW_READ = """Target paper: {title}
{abstract}

Working memory (what you noted so far, as JSON):
{memory}

Now read reference [{key}] {ref_title}:
{ref_abstract}

Update the working memory: add what [{key}] contributes to the target's related work (1 or 2 short notes), \
and keep the earlier notes that still matter (you may shorten or merge them). Each note names its key."""

ORCHESTRATOR = """You coordinate {n_agents} agents writing the related-work section of the target paper \
"{title}" together in a shared workspace. Round {round} of {rounds}.

Actions: retrieve (read a new reference), disseminate (share own notes with the team), compose (write or \
revise a draft paragraph), critique (review the draft and give feedback).

State (what the agents can see):
- references: {n_refs} in the pool, {n_read} read by the team; unread: {unread}
- shared notes ({n_global}):
{notes}
- draft paragraphs ({n_segments}, {draft_words} words):
{draft}
- open feedback ({n_feedback}):
{feedback}
Agents:
{agents}

Assign one allowed action to every agent. A good episode reads first, shares what was read, drafts from the \
shared notes, then critiques and revises; the draft must exist before the last round."""

# ---------------------------------------------------------------------------------------------
# Naive Orchestrator (crewlib.baselines.naive_orchestrator): HuggingGPT-style, no shared workspace.
# The coordinator plans and writes; each agent sees only its instruction and its own references.
NAIVE_COORDINATOR_SYSTEM = (
    "You coordinate a team of agents that help you write the related-work section of a scientific paper. "
    "References are identified by keys such as [R3]. Use only the keys you are given and never invent facts "
    "or references."
)

NAIVE_AGENT_SYSTEM = (
    "You help write the related-work section of a scientific paper. Cite only with the reference keys you are "
    "given, such as [R3]; never invent references or facts."
)

NAIVE_DECOMPOSE = """Target paper: {title}
{abstract}

References (key: title):
{references}

You coordinate {n_agents} agents, numbered 0 to {last_agent}. An agent sees only the subtasks and references \
you give it, never the other agents' work. Split the related-work writing into subtasks: each has one agent, a \
one-sentence instruction (e.g. summarise what these works contribute on one theme of the target paper) and the \
keys of the references it needs, such as "R1". Cover every reference at least once."""

NAIVE_AGENT = """Target paper: {title}

Your subtask(s) from the coordinator:
{instructions}

Your references:
{references}

Answer with one short paragraph (2 to 4 sentences) that does the subtask(s). Cite every claim about a work \
with its key, e.g. [R2]; use only the keys above."""

NAIVE_FALLBACK_INSTRUCTION = "Summarise what these references contribute to the target paper's related work."

NAIVE_FOLLOW_UP = """Target paper: {title}

References (key: title):
{references}

Replies of your agents so far (agent, references: reply):
{replies}

Check {step} of {max_steps}. If the replies cover the references well enough to write the related-work \
section, answer done = true. Otherwise answer done = false with follow-up subtasks for what is missing or \
unclear: each has one agent (0 to {last_agent}), a one-sentence instruction and the reference keys it needs."""

NAIVE_WRITE = """Target paper: {title}
{abstract}

Your agents' replies (each cites references by key):
{replies}

Write the related-work section of the target paper in 2 to 4 paragraphs, at most {words} words, from these \
replies. Group the works by theme and relate them to the target paper. """ + SECTION_RULES + """ Answer with the \
section text only, without a heading or a preamble."""

# ---------------------------------------------------------------------------------------------
# MA-RWG (crewlib.baselines.marwg): contextual summaries with pseudo-labels, outline over the taxonomy,
# draft -> feedback -> revision, and fact-checking by a verifier. Every answer is one JSON object.
MARWG_SYSTEM = (
    "You are part of a pipeline that writes the related-work section of a scientific paper. References are "
    "identified by keys such as [R3]. Use only the keys you are given, never invent facts or references, and "
    "always answer with a single JSON object."
)

MARWG_VERIFIER_SYSTEM = (
    "You check the citations of a related-work section against the abstracts of the cited papers. Judge only "
    "from the abstracts you are given, and always answer with a single JSON object."
)

MARWG_SUMMARY = """Target paper: {title}
{abstract}

Candidate reference [{key}] {ref_title}, its passages most relevant to the target:
{pages}

Summarise [{key}] in 1 or 2 sentences in the context of the target paper: what it does and why it matters \
for the target. Then label [{key}] on four dimensions, each label at most 4 words: its task (the problem it \
addresses), methodology (its approach), dataset (the data it uses, or "none") and evaluation (how it is \
evaluated, or "none")."""

MARWG_OUTLINE = """Target paper: {title}
{abstract}

Taxonomy of the candidate papers (each node lists the keys of its papers):
{taxonomy}

Candidate papers (key, title, summary in the context of the target):
{papers}

Plan the related-work section as {min_topics} to {max_topics} topics, one paragraph each. Give every topic a \
title of at most {max_words} words and the keys of the candidate papers it covers (at least one each). Cover \
every candidate key, and use only the keys above."""

MARWG_OUTLINE_NO_TAXONOMY = """Target paper: {title}
{abstract}

Candidate papers (key, title, summary in the context of the target):
{papers}

Plan the related-work section as {min_topics} to {max_topics} topics, one paragraph each. Give every topic a \
title of at most {max_words} words and the keys of the candidate papers it covers (at least one each). Cover \
every candidate key, and use only the keys above."""

MARWG_DRAFT = """Target paper: {title}
{abstract}

Outline of the related-work section:
{outline}

Write paragraph {index} of {n}, on the topic "{topic}". Papers of this topic (key, title, summary):
{papers}

Write one coherent paragraph of about {words} words that discusses these papers, relates them to the target \
paper, and cites every claim about a paper with its key, e.g. [R2] or [R1, R4]. Use only the keys listed \
above, and do not repeat the topic title."""

MARWG_FEEDBACK = """Target paper: {title}
{abstract}

Candidate papers:
{papers}

Draft related-work section, one paragraph per topic:
{draft}

Review the draft on four dimensions, one or two sentences each, saying concretely what to change: \
structural_logic (whether the topics and the works within them are ordered and connected logically), \
critical_analysis (whether the draft compares the works and states their limitations rather than listing \
them), prominent_contribution (whether the target paper's contribution stands out against the prior work) \
and concise_language (wordy, vague or repeated phrasing to cut)."""

MARWG_REVISE = """Target paper: {title}

Paragraph {index} of {n} of the related-work section, on the topic "{topic}":
{paragraph}

Papers of this topic (key, title, summary):
{papers}

Reviewer feedback on the whole section:
{feedback}

Revise the paragraph, following the feedback where it concerns this topic. Keep it one paragraph on this \
topic, of about {words} words, citing every claim about a paper with its key. Use only the keys listed above."""

MARWG_VERIFY = """Cited paper(s):
{cited}

Sentence of a related-work section:
{sentence}

Does the sentence describe the cited paper(s) correctly, judging only from the abstracts above? Label it \
with exactly one of:
- none: the sentence is supported by the cited abstract(s)
- Direct Contradiction: the sentence contradicts a cited abstract
- Unsubstantiated: the sentence claims something the cited abstracts do not support
- Misrepresentation: the sentence distorts or overstates what a cited paper does
- Incorrect Attribution: the claim belongs to a paper other than the one cited
- Other: another citation error
Explain the label in one sentence."""

MARWG_CORRECT = """Target paper: {title}

A sentence of its related-work section has a citation error ({label}): {explanation}
Sentence:
{sentence}

Cited paper(s):
{cited}

Papers you may cite (key, title, summary):
{papers}

Rewrite the sentence so that it is accurate and supported by the papers it cites. Keep it one sentence, cite \
with the keys above, e.g. [R2], and keep at least one citation."""

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

# ---------------------------------------------------------------------------------------------
# The task the prompts describe (``llm.task_wording``). Every template above is written for
# related-work generation. Multi-News (notebook 07: the summary of a news event, the articles as
# the references) sends the same templates with these phrases replaced, in this order, in every
# message a client sends (crewlib/llm/client.py) — the controller, the reward and the systems are
# unchanged, and the related-work prompts stay byte-identical, so their recorded answers stay valid.
# Only whole phrases of the templates are replaced, never a single common word, so an article's own
# text passes through untouched; tests/test_multinews.py checks both, and that no phrase here is stale.
NEWS_RUBRICS = {
    "coverage": """5: covers all the key facts of the event the articles report (what happened, where, when, who \
was involved, the consequences), each stated accurately.
4: covers most key facts; one minor fact is missing.
3: covers the main event but misses several important facts.
2: covers only a few facts; major parts of the event are missing.
1: covers almost none of the event, or reports facts the articles do not.""",
    "logic": """5: well organised; facts are grouped by aspect, transitions are clear, and the summary reads as one \
coherent account of the event.
4: mostly well organised; one or two weak transitions.
3: some grouping, but the order is partly arbitrary or hard to follow in places.
2: mostly a list of article summaries with little connection between them.
1: incoherent, repetitive or contradictory.""",
    "relevance": """5: every sentence is about the event, and where the articles disagree the summary says so.
4: nearly all content is about the event; a disagreement between the articles is sometimes glossed over.
3: about the event overall, but some content is generic or only loosely connected to it.
2: much of the content is off-topic.
1: unrelated to the event.""",
}

NEWS_SUMMARY = (
    *((RUBRICS[d], NEWS_RUBRICS[d]) for d in NEWS_RUBRICS),
    ("You are an expert reviewer of scientific writing. You grade a related-work section",
     "You are an expert editor of news writing. You grade a summary of a news event"),
    ("the related-work section of a scientific paper", "the summary of a news event"),
    ('the related-work section of the paper "', 'the summary of the news event "'),
    ("the related-work section of the target paper", "the summary of the event"),
    ("You are reading reference [", "You are reading article ["),
    ("Extract 1 to 3 findings of [", "Extract the 1 to 3 most important facts reported by ["),
    ("the target paper's related work. Each note is one sentence in your own words.",
     "the summary of the event. Each note is one short sentence (at most 30 words) in your own words, never a copied "
     "paragraph."),
    ("the target paper's related work", "the summary of the event"),
    ("the target's related work", "the summary of the event"),
    ("Write in the third person about the cited works (their authors' \"we\" becomes \"the authors\" or the "
     "method's name).", "Write in the third person, as a reporter would: never \"we\" or \"I\" outside a quotation."),
    ("Cite every claim with its key in square brackets, e.g. [R2] or [R1, R4], using only the keys given; never "
     "cite by title or author name.",
     "End every sentence with the key of the article it comes from in square brackets, e.g. \"... on Tuesday [R2].\", "
     "or [R1, R3] when several articles report it; use only the keys given, never an outlet's name."),
    ("Do not describe the target paper as related work, and do not mention", "Do not begin with \"The summary\" or "
     "\"The articles\", and do not mention"),
    ("Open with the theme they share, name each work's method where you cite it, say how they differ, and end "
     "with one sentence on how they bear on this paper's problem.",
     "Open with what they report in common, say where they differ, and end with what happened next or is "
     "expected next, as the articles report it."),
    ("Group the works by theme and relate them to the target paper.",
     "Merge what the articles report into one account, most important first, and say where they disagree."),
    ("The section so far", "The summary so far"),
    ("Works the section does not cite yet", "Articles the summary does not cite yet"),
    ("about these works only", "about these articles only"),
    ("Notes on the works it cites", "Notes on the articles it cites"),
    ("Papers the section may cite", "Articles the summary may cite"),
    ("the section text only", "the summary text only"),
    ("of the related-work section", "of the summary"),
    ("Related-work section:", "Summary:"),
    ("Target paper:", "Event:"),
)
WORDINGS: dict[str, tuple[tuple[str, str], ...]] = {"related_work": (), "news_summary": NEWS_SUMMARY}


def reword(text: str, wording: str) -> str:
    """``text`` with the phrases of ``WORDINGS[wording]`` replaced in order (related_work: unchanged)."""
    for old, new in WORDINGS[wording]:
        text = text.replace(old, new)
    return text

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
