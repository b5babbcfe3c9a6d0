"""MA-RWG's prompts, one per stage (crewlib.baselines.marwg); every answer is one JSON object."""

from __future__ import annotations

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

Revise the paragraph, following the feedback where it concerns this topic.{aspects} Keep it one paragraph on this \
topic, of about {words} words, citing every claim about a paper with its key. Use only the keys listed above."""

# MA-RWG's revision (the paper): four aspects every revision works on; without them (baselines.marwg.revision_aspects
# false, the notebooks' recorded answers) the revision follows the feedback alone.
MARWG_REVISE_ASPECTS = (" Revise along four aspects: reorganise the structure, strengthen the criticism, simplify "
                        "the language and make the comparison between the works clearer.")

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
