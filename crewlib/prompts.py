"""Every prompt the project sends, in one place, with a version.

Bump ``PROMPT_VERSION`` when a template changes: it is part of the cache key, so answers
recorded for an older wording are never replayed for the new one.
"""

from __future__ import annotations

from collections.abc import Sequence

PROMPT_VERSION = "2026-12-02.1"

WRITER_SYSTEM = (
    "You are an expert scientific writer. You write related-work sections that are accurate, "
    "well organised and grounded in the references you are given. You cite only the reference keys "
    "provided, in square brackets such as [R2] or [R1, R4], and you never invent references."
)

# Small local models summarise the target instead of the references unless the task is
# spelled out reference by reference; this wording got every sentence cited on the 1.5B.
RELATED_WORK_PARAGRAPH = """Target paper: {title}
{abstract}

References:
{references}

Write the related-work paragraph of the target paper. Write one short sentence (at most 25 words) \
about each reference R1 to R{n}, in order, saying what it contributed and ending with its key in square \
brackets, like this: "Transformers replaced recurrence with self-attention [R1]." Then add one sentence on \
how the target paper builds on or differs from these works. Write plain prose as a single paragraph, \
with no lists or headings."""


def format_references(references: Sequence[dict], keys: Sequence[str], abstract_chars: int = 300) -> str:
    """One block per reference: ``[R1] Title (year): abstract``, abstracts cut at ``abstract_chars``."""
    lines = []
    for key, ref in zip(keys, references, strict=True):
        year = f" ({ref['year']})" if ref.get("year") else ""
        abstract = (ref.get("abstract") or "").strip()
        if len(abstract) > abstract_chars:
            abstract = abstract[:abstract_chars].rsplit(" ", 1)[0] + " ..."
        lines.append(f"[{key}] {ref['title']}{year}: {abstract}")
    return "\n".join(lines)


def related_work_messages(title: str, abstract: str, references: Sequence[dict],
                          keys: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for one related-work paragraph citing ``keys``."""
    user = RELATED_WORK_PARAGRAPH.format(title=title, abstract=abstract, n=len(keys),
                                         references=format_references(references, keys))
    return [{"role": "system", "content": WRITER_SYSTEM}, {"role": "user", "content": user}]
