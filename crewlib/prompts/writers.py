"""The single-prompt baselines', SRW's, the Orchestrator's and the Naive Orchestrator's prompts."""

from __future__ import annotations

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
works by theme and relate them to the target paper. {rules} Answer with the section text \
only, without a heading or a preamble."""

SRW_READ = """Target paper: {title}
{abstract}

Working memory (what you noted so far, as JSON):
{memory}

Now read reference [{key}] {ref_title}:
{ref_abstract}

Update the working memory: add what [{key}] contributes to the target's related work (1 or 2 short notes), \
and keep the earlier notes that still matter (you may shorten or merge them). Each note names its key."""

# SRW since edition 2026-12-06.1 (docs/method.md, "SRW"). The reader notes the work it reads, never the paper: the
# paper by its title only (with its abstract, a small model noted the paper's findings as the work's), the work read
# last, next to the instruction; the memory keeps the earlier notes it does not give again (crewlib.baselines.srw).
# {ref_text}: the work's abstract, or SRW_TITLE_ONLY.
SRW_READ_WORK = """You prepare the related-work section of the paper "{title}" by reading the works it cites, one \
at a time, and keeping notes on them in a working memory.

Working memory (your notes on the works read so far, as JSON):
{memory}

Now read the cited work [{key}] {ref_title}:
{ref_text}

Answer with 1 or 2 short notes on what [{key}] itself does, proposes or finds: one sentence each, at most 30 words, \
in your own words and in the third person ("the authors" or the method's name, never "we"), taken only from its text \
just above, never from another work's notes; give each note the key "{key}". You may also give an earlier note \
again, shortened or corrected, with its own key; the notes you do not give again are kept."""

# The line that stands for the text of a work known by its title only (SRW_READ_WORK's {ref_text}).
SRW_TITLE_ONLY = "(Only its title is known: note only what the title says, nothing more.)"

# SRW's one write call since edition 2026-12-06.1: the paper's own text first (for the sentences that relate the works
# to it), then every work read, one line each with its title and its notes as sentences ending with its key, then the
# shape of a paragraph (without it the 1.5B wrote about the paper, not the works) and the section rules.
# {works}: crewlib.baselines.srw.works_block.
SRW_WRITE = """You write the related-work section of the paper "{title}". The paper in its own words (it is not one of \
the related works):
{abstract}

The works it cites that you read, with your notes on each:
{works}

Write the related-work section about these works in 2 to 4 paragraphs, at most {words} words, one theme of the works \
a paragraph, each shaped like this:
<The theme, in one sentence>. <What one work of the theme does or finds, from its notes> [R2]. <What another work \
does or finds> [R5]. ... This paper <how the paper builds on these works, differs from them or addresses what they \
leave open>.
{rules} Answer with the section text only, without a heading or a preamble."""

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
replies. Group the works by theme and relate them to the target paper. {rules} Answer with the \
section text only, without a heading or a preamble."""
