"""The output checks every system's related-work section passes, and the repairs they count.

One function, :func:`finish_section`, serves CREW and every baseline, so that "CREW beats long
context" compares texts held to the same rules (docs/method.md, "Output checks"). What it
repairs it counts in a :class:`SectionReport` (``Generation.notes["output_checks"]``); nothing is
changed silently:

- **repeated paragraphs** — a paragraph whose content words overlap an earlier one by at least
  ``duplicate_threshold`` (overlap coefficient) is removed;
- **duplicated markers** — ``[R2] [R2]`` and ``[R2, R2]`` become ``[R2]``;
- **meta-text** — a sentence about the draft, the workspace, notes or feedback, or a preamble
  ("Here is a related-work section ...") is removed;
- **stray punctuation** — repeated full stops (``[R2]. . The``) and "sentences" with no word
  are removed;
- **truncation** — a last sentence cut by the token limit (no closing punctuation) is removed
  (unless it is the whole text, which is kept; counted either way).

Two problems are counted but not repaired, because only a writer can fix them: sentences in
the first person copied from a cited abstract (a cited author's "we"), and sentences that
describe the target paper itself as related work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from crewlib.citations import find_citation_keys
from crewlib.tasks import Task
from crewlib.text import containment, content_words, sentences, strip_markers

_META = re.compile(
    r"\b(?:the\s+(?:current\s+|existing\s+|above\s+)?drafts?|workspace|segments?\s*(?:id|\d)|segment_id|"
    r"(?:shared|team'?s?)\s+(?:knowledge|notes)|the\s+notes|open\s+feedback|the\s+feedback|"
    r"(?:here\s+is|below\s+is)\s+(?:a|the|an)\b|sample\s+related[- ]work|as\s+an\s+ai\b|"
    r"paragraphs?\s+(?:id\s*)?\d|(?:the|this)\s+related[- ]work\s+section|"
    r"this\s+section\s+(?:discusses|reviews|presents|covers|describes))",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:we|our|us)\b", re.IGNORECASE)
_REPEATED_KEY = re.compile(r"\[(R\d+)\](?:\s*\[\1\])+")
_BRACKET = re.compile(r"\[([^\[\]]+)\]")
_STRAY_STOPS = re.compile(r"([.!?])(?:[ \t]+\.)+(?=\s|$)")  # "[R2]. . The" → "[R2]. The"
_CLOSED = re.compile(r"[.!?][\"')\]]*$|\][.!?]?$")
COPY_THRESHOLD = 0.6  # share of a first-person sentence's content words found in one cited abstract
TARGET_THRESHOLD = 0.7  # share of a sentence's content words found in the target's abstract


def overlap(a: str, b: str) -> float:
    """Overlap coefficient of the two texts' content words (markers ignored): |A ∩ B| / min(|A|, |B|)."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def near_duplicate(a: str, b: str, threshold: float) -> bool:
    return overlap(a, b) >= threshold


def dedupe_markers(text: str) -> tuple[str, int]:
    """``[R2] [R2]`` → ``[R2]`` and ``[R2, R2, R3]`` → ``[R2, R3]``; returns the text and the markers removed."""
    removed = 0

    def adjacent(match: re.Match) -> str:
        nonlocal removed
        removed += match.group(0).count("[") - 1
        return f"[{match.group(1)}]"

    def inside(match: re.Match) -> str:
        nonlocal removed
        items = [i.strip() for i in re.split(r"[,;]", match.group(1))]
        if not all(re.fullmatch(r"R\d+", i) for i in items):
            return match.group(0)
        unique = list(dict.fromkeys(items))
        removed += len(items) - len(unique)
        return f"[{', '.join(unique)}]"

    text = _BRACKET.sub(inside, text)
    text = _REPEATED_KEY.sub(adjacent, text)
    return text, removed


def is_meta(sentence: str) -> bool:
    """A sentence about the writing process (draft, workspace, notes, feedback) or a preamble."""
    return bool(_META.search(strip_markers(sentence)))


def is_first_person_copy(sentence: str, task: Task) -> bool:
    """A sentence in the first person whose words come from a cited paper's abstract (its authors' "we")."""
    if not _FIRST_PERSON.search(strip_markers(sentence)):
        return False
    refs = [task.reference_by_key[k] for k in find_citation_keys(sentence) if k in task.reference_by_key]
    return any(ref.abstract and containment(sentence, ref.abstract) >= COPY_THRESHOLD for ref in refs)


def describes_target(sentence: str, task: Task) -> bool:
    """A sentence that restates the target paper's abstract (the target presented as related work)."""
    return len(content_words(sentence)) >= 6 and containment(sentence, task.abstract) >= TARGET_THRESHOLD


def is_truncated(text: str) -> bool:
    """The text ends inside a sentence (a generation stopped by its token limit)."""
    stripped = text.rstrip()
    return bool(stripped) and not _CLOSED.search(stripped)


@dataclass
class SectionReport:
    repeated_paragraphs: int = 0
    duplicated_markers: int = 0
    meta_sentences: int = 0
    truncated: int = 0
    stray_punctuation: int = 0
    first_person_copies: int = 0  # counted, not repaired
    target_descriptions: int = 0  # counted, not repaired

    @property
    def repairs(self) -> int:
        return (self.repeated_paragraphs + self.duplicated_markers + self.meta_sentences + self.truncated
                + self.stray_punctuation)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def finish_section(text: str, task: Task, duplicate_threshold: float) -> tuple[str, SectionReport]:
    """The section with the repairs of the module docstring applied, and what was repaired or found."""
    report = SectionReport()
    text, report.duplicated_markers = dedupe_markers(text)
    text, report.stray_punctuation = _STRAY_STOPS.subn(r"\1", text)
    kept: list[str] = []
    blocks = paragraphs(text)
    for i, block in enumerate(blocks):
        sents = sentences(block)
        if i == len(blocks) - 1 and sents and is_truncated(block):
            report.truncated = 1
            if kept or len(sents) > 1:  # a text that is one cut sentence is kept (counted), not emptied
                sents = sents[:-1]
        clean = []
        for sent in sents:
            if not re.search(r"\w", strip_markers(sent)):
                report.stray_punctuation += 1
                continue
            if is_meta(sent):
                report.meta_sentences += 1
                continue
            report.first_person_copies += is_first_person_copy(sent, task)
            report.target_descriptions += describes_target(sent, task)
            clean.append(sent)
        block = " ".join(clean)
        if not block:
            continue
        if any(near_duplicate(block, earlier, duplicate_threshold) for earlier in kept):
            report.repeated_paragraphs += 1
            continue
        kept.append(block)
    return "\n\n".join(kept), report


def repeated_paragraph_count(text: str, threshold: float) -> int:
    """Paragraphs that near-duplicate an earlier one (the quality benchmark's repetition count)."""
    blocks = paragraphs(text)
    return sum(any(near_duplicate(b, a, threshold) for a in blocks[:i]) for i, b in enumerate(blocks))


def join_short_paragraphs(blocks: Iterable[str]) -> tuple[list[str], int]:
    """Each one-sentence paragraph appended to the paragraph it shares the most content with (a
    revision that cut a paragraph to one sentence leaves an orphan); returns the paragraphs and
    how many were joined. A section of one-sentence paragraphs only is left as it is."""
    blocks = list(blocks)
    long = [i for i, b in enumerate(blocks) if len(sentences(b)) > 1]
    if not long:
        return blocks, 0
    joined = {i: blocks[i] for i in long}
    for j, block in enumerate(blocks):
        if j not in joined:
            host = max(long, key=lambda i: overlap(blocks[i], block))
            joined[host] = f"{joined[host]} {block}"
    return [joined[i] for i in long], len(blocks) - len(long)


def order_paragraphs(blocks: Iterable[str], rank: dict[str, int]) -> list[str]:
    """Thematic order without an LLM: start from the paragraph citing the most relevant work, then
    always continue with the remaining paragraph closest in content (ties: more relevant works first).

    ``rank``: citation key → its position in the pool's relevance order.
    """
    remaining = list(blocks)

    def first_rank(block: str) -> int:
        return min((rank.get(k, len(rank)) for k in find_citation_keys(block)), default=len(rank))

    ordered: list[str] = []
    while remaining:
        if not ordered:
            nxt = min(remaining, key=first_rank)
        else:
            nxt = max(remaining, key=lambda b: (overlap(b, ordered[-1]), -first_rank(b)))
        ordered.append(nxt)
        remaining.remove(nxt)
    return ordered
