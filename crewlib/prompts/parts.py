"""What a prompt is made of: its fixed instructions, the target paper, the references read, the notes, the draft.

:func:`fill` formats a template and measures each part (≈ 4 characters a token, :func:`crewlib.text.approx_tokens`)
by the field it was filled from (:data:`FIELD_PART`); the template's own words, the system message and the rules
are ``fixed``. The ledger records the parts of every call (:class:`crewlib.llm.ledger.Caller`), so the cost of a
run can be broken down by what its prompts carry (``summary.json``'s ``cost``, ``benchmarks/cost.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter

from crewlib.text import approx_tokens

PARTS = ("fixed", "target", "references", "notes", "draft")
# Template fields by part; every other field (keys, rules, counts) is part of the fixed instructions.
FIELD_PART = {
    "title": "target", "topic": "target", "abstract": "target", "paper": "target",
    "ref_title": "references", "ref_abstract": "references", "ref_text": "references", "works": "references",
    "knowledge": "notes", "notes": "notes", "memory": "notes",
    "outline": "draft", "draft": "draft", "text": "draft", "problems": "draft", "feedback": "draft",
    "unread": "references",
}


@dataclass(frozen=True)
class Filled:
    """A formatted prompt and its parts' estimated tokens (``(part, tokens)`` pairs in :data:`PARTS` order)."""

    text: str
    parts: tuple[tuple[str, int], ...]

    def with_system(self, system: str) -> tuple[tuple[str, int], ...]:
        """The parts of the whole request: the system message counts as fixed."""
        return tuple((name, tokens + (approx_tokens(system) if name == "fixed" else 0)) for name, tokens in self.parts)


def fill(template: str, **fields: object) -> Filled:
    """``template.format(**fields)`` with each part's estimated tokens (a field the template does not use counts
    nothing)."""
    text = template.format(**fields)
    used = {name for _, name, _, _ in Formatter().parse(template) if name}
    sized = {part: 0 for part in PARTS}
    for name, value in fields.items():
        part = FIELD_PART.get(name) if name in used else None
        if part is not None:
            sized[part] += approx_tokens(str(value))
    sized["fixed"] = max(0, approx_tokens(text) - sum(sized.values()))
    return Filled(text, tuple(sized.items()))


def parts_text(parts: tuple[tuple[str, int], ...]) -> str:
    """The parts as one ledger cell: ``fixed=310;target=120;...`` (read back by
    :meth:`crewlib.llm.ledger.Ledger.breakdown`)."""
    return ";".join(f"{name}={tokens}" for name, tokens in parts)

