"""Damages of a related-work section that keep it fluent but undo what makes it one (the discrimination test).

:func:`crewlib.experiments.discrimination.degrade` applies these to a gold section written with a system's keys
(parenthetical groups "[R1, R2]", narrative citations "Smith et al. [R3] show ..."), capitalised or lowercased
(Hoang & Kan's sections: "researchers usually present ... [R2] for example, evaluated ..."). Each damage removes one
thing a reviewer looks for beyond fluent, cited sentences (RWGBench: a section selects, organises and frames prior
work to show how the paper relates to it), so an instrument that measures that thing must rank the gold above it:

- ``works_listed`` — each paragraph one sentence listing its works, no content ("Several approaches have been
  proposed [R1, R2, R3].");
- ``positioning_removed`` — every sentence on the target paper itself removed (roadmap sentences stay);
- ``annotated_bibliography`` — one sentence per cited work, its abstract's opening in the third person: no relation
  between works, none to the paper;
- ``themes_interleaved`` — sentences dealt round-robin across the paragraphs, same paragraph sizes: themes mixed;
- ``comparisons_removed`` — sentences that compare or contrast works removed (positioning sentences kept).

A damage a text does not allow raises ValueError saying why (the caller records it as skipped, never silently).
``sources`` maps a key to its cited work's abstract (what :func:`~crewlib.experiments.discrimination.degraded_outputs`
passes: the reference's abstract, its title apart).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from crewlib.citations import find_citation_keys, is_lowercased
from crewlib.eval.relating import parse_sentence, split_sentences
from crewlib.positioning import refers_to_paper
from crewlib.sections import as_work, paragraphs
from crewlib.text import sentences

DAMAGES = ("works_listed", "positioning_removed", "annotated_bibliography", "themes_interleaved",
           "comparisons_removed")
LISTING = "Several approaches have been proposed"
# Words by which a sentence compares or contrasts works (read on the sentence without its citations).
_CONTRAST = re.compile(
    r"\b(?:unlike|in\s+contrast|whereas|while|however|compared\s+(?:to|with)|similar\s+to|differ\w*|both|"
    r"instead\s+of|rather\s+than|outperform\w*)\b",
    re.IGNORECASE,
)
_MASKED_KEY = re.compile(r"\[(r\d+(?:\s*[,;]\s*r\d+)*)\]")  # a key lowercased with its sentence


def opening_sentence(abstract: str) -> str:
    """An abstract's first sentence: :func:`crewlib.text.sentences`' first; in a lowercased abstract (RWSData's,
    whose sentences often run on without a space: "... paraphrases .we show ...") the text up to its first stop."""
    if not is_lowercased(abstract):
        found = sentences(abstract)
        return found[0] if found else ""
    return re.split(r"\s?[.!?](?:\s+|(?=[a-z]))", abstract.strip(), maxsplit=1)[0].strip()


def _style(gold: str) -> str:
    """How the gold's keys are written: ``R`` ("[R3]", a system's keys) or ``numeric`` ("[3]", a numbered set)."""
    return "R" if find_citation_keys(gold) or not find_citation_keys(gold, "numeric") else "numeric"


def _keys(text: str, style: str) -> list[str]:
    """The distinct keys ``text`` cites, in order of first citation."""
    return list(dict.fromkeys(find_citation_keys(text, style)))


def _cased(sentence: str, lower: bool) -> str:
    """A written sentence in the gold's case: lowercased prose (keys kept) when the gold is lowercased."""
    return _MASKED_KEY.sub(lambda m: m.group(0).upper(), sentence.lower()) if lower else sentence


def _join(grid: list[list[str]]) -> str:
    return "\n\n".join(" ".join(p) for p in grid if p)


def works_listed(gold: str) -> str:
    """Each paragraph one sentence listing the works it cites (order of first citation), nothing said of them; a
    paragraph citing nothing is dropped."""
    lower, style = is_lowercased(gold), _style(gold)
    listed = [f"{_cased(LISTING, lower)} [{', '.join(keys)}]." for p in paragraphs(gold) if (keys := _keys(p, style))]
    if not listed:
        raise ValueError("the gold cites no work: there are no works to list")
    return "\n\n".join(listed)


def positioning_removed(gold: str, title: str) -> str:
    """Every sentence that speaks of the target paper itself removed (:func:`crewlib.positioning.refers_to_paper`),
    roadmap sentences ("In this section, we review ...") kept; an emptied paragraph disappears."""
    lower = is_lowercased(gold)
    grid, removed = [], 0
    for paragraph in paragraphs(gold):
        kept = []
        for sentence in split_sentences(paragraph):
            parsed = parse_sentence(sentence, lower)
            if refers_to_paper(parsed.bare, title) and not parsed.roadmap:
                removed += 1
            else:
                kept.append(sentence)
        grid.append(kept)
    if not removed:
        raise ValueError("no sentence speaks of the target paper: there is no positioning to remove")
    if not any(grid):
        raise ValueError("every sentence speaks of the target paper: nothing would be left")
    return _join(grid)


def _annotation(key: str, abstract: str, lower: bool) -> str:
    """The work's abstract's opening sentence in the third person, followed by its key; a stock line without one."""
    opening = opening_sentence(abstract)
    if not opening:
        return f"[{key}] is a related work."
    said = as_work(opening).rstrip(" .!?;:")
    return _cased(f"{said[:1].upper()}{said[1:]} [{key}].", lower)


def annotated_bibliography(gold: str, sources: Mapping[str, str]) -> str:
    """Per paragraph, one sentence per work it cites (order of first citation): the work's abstract opening in the
    third person ("The authors propose ... [R3].") — no relation between works, no sentence on the paper."""
    lower, style = is_lowercased(gold), _style(gold)
    grid = [[_annotation(k, sources.get(k, ""), lower) for k in _keys(p, style)] for p in paragraphs(gold)]
    cited = {k for p in paragraphs(gold) for k in _keys(p, style)}
    if not any(sentences(sources.get(k, "")) for k in cited):
        raise ValueError("no cited work has an abstract: there is nothing to annotate")
    return _join(grid)


def themes_interleaved(gold: str) -> str:
    """The sentences dealt round-robin across the paragraphs (sentence 1 of each, then sentence 2, ...) and re-cut
    into paragraphs of the gold's sizes: as many paragraphs and the same sentences, each mixing themes."""
    grid = [split_sentences(p) for p in paragraphs(gold)]
    if sum(len(p) >= 2 for p in grid) < 2:
        raise ValueError("fewer than two paragraphs of two sentences or more: there are no themes to interleave")
    dealt = [p[j] for j in range(max(map(len, grid))) for p in grid if j < len(p)]
    out, at = [], 0
    for size in map(len, grid):
        out.append(dealt[at:at + size])
        at += size
    if out == grid:
        raise ValueError("dealing the sentences round-robin leaves every paragraph as it was")
    return _join(out)


def compares(sentence: str, title: str, lower: bool) -> bool:
    """The sentence compares or contrasts works — it cites two distinct works or more, or holds a contrast word —
    and is not about the target paper (a sentence setting the paper beside the works is positioning)."""
    parsed = parse_sentence(sentence, lower)
    return ((len(parsed.works) >= 2 or bool(_CONTRAST.search(parsed.bare)))
            and not refers_to_paper(parsed.bare, title))


def comparisons_removed(gold: str, title: str) -> str:
    """Every sentence that compares or contrasts works (:func:`compares`) removed; an emptied paragraph disappears."""
    lower = is_lowercased(gold)
    grid = [split_sentences(p) for p in paragraphs(gold)]
    kept = [[s for s in p if not compares(s, title, lower)] for p in grid]
    if kept == grid:
        raise ValueError("no sentence compares or contrasts works: there is no comparison to remove")
    if not any(kept):
        raise ValueError("every sentence compares works: nothing would be left")
    return _join(kept)


def damage(gold: str, kind: str, *, title: str = "", sources: Mapping[str, str] | None = None) -> str:
    """``gold`` damaged one of the ways of :data:`DAMAGES`; ``title``: the target paper's (its short name speaks
    of it); ``sources``: key → the cited work's abstract. ValueError for a damage the text does not allow."""
    sources = sources or {}
    apply: dict[str, Callable[[], str]] = {
        "works_listed": lambda: works_listed(gold),
        "positioning_removed": lambda: positioning_removed(gold, title),
        "annotated_bibliography": lambda: annotated_bibliography(gold, sources),
        "themes_interleaved": lambda: themes_interleaved(gold),
        "comparisons_removed": lambda: comparisons_removed(gold, title),
    }
    if kind not in apply:
        raise ValueError(f"unknown damage {kind!r}; known: {DAMAGES}")
    return apply[kind]()
