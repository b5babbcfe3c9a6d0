"""Measures of a finished section's text used only by the evaluation: copied runs, stated numbers, paragraphing
and local coherence (crewlib.eval.suite's ``grounding`` group; docs/method.md, "Grounding")."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence

from crewlib.citations import citation_spans
from crewlib.eval.relating import content_per_citation, split_sentences
from crewlib.positioning import copies_cited_voice, refers_to_paper
from crewlib.sections import _known_keys, _support, is_first_person, makes_claim, overlap, paragraphs, repeats_sentence
from crewlib.text import numbers, strip_markers, tokens


def copied_sentences(text: str, sources: Mapping[str, str], min_words: int) -> int:
    """Sentences that copy a run of ``min_words`` consecutive words or more from one of ``sources`` (a reviewer
    rejects text pasted from an abstract, cited or not)."""
    runs = {gram for body in sources.values() for gram in _ngrams(tokens(strip_markers(body)), min_words)}
    return sum(bool(_ngrams(tokens(strip_markers(s)), min_words) & runs)
               for s in section_sentences(text))


def _ngrams(words: tuple[str, ...], n: int) -> set[tuple[str, ...]]:
    return {words[i:i + n] for i in range(len(words) - n + 1)}


def number_support(text: str, sources: Mapping[str, str]) -> float | None:
    """Of the numbers the sentences citing a known work state (:func:`crewlib.text.numbers`), the share its cited
    works' evidence states too; None when no cited sentence states a number."""
    found = []
    for s in section_sentences(text):
        stated = numbers(s)
        if stated and (keys := _known_keys(s, sources)):
            evidence = {e.group(1) for e in numbers(" ".join(sources[k] for k in keys))}
            found += [m.group(1) in evidence for m in stated]
    return sum(found) / len(found) if found else None


def paragraphing(text: str, sentences_per_paragraph: int) -> float | None:
    """Whether the text is cut into paragraphs: paragraphs × ``sentences_per_paragraph`` / sentences, at most 1
    (one block of twelve sentences scores 5/12 at five a paragraph); None for an empty text."""
    blocks = paragraphs(text)
    n = sum(len(split_sentences(b)) for b in blocks)
    return min(1.0, len(blocks) * sentences_per_paragraph / n) if n else None


def local_coherence(text: str) -> float | None:
    """How much more each sentence says about the one before it (within a paragraph) than about any sentence of the
    section: for each adjacent pair, the share of the section's sentence pairs whose content-word overlap
    (:func:`overlap`) is below the adjacent pair's (a tie counts half), averaged over the adjacent pairs. 0.5: the
    sentences follow each other no better than in a random order; None for a text of fewer than three sentences or
    without two sentences in one paragraph. A lexical, rank-based variant of local coherence (Foltz, Kintsch and
    Landauer 1998: adjacent-sentence similarity), measured against the section's own pairs (instrument version 5,
    docs/method.md): a section that repeats its vocabulary everywhere no longer scores as coherent, and sentences
    in a shuffled order or themes dealt across paragraphs score about 0.5."""
    split = [split_sentences(p) for p in paragraphs(text)]
    flat = [s for p in split for s in p]
    adjacent = [overlap(a, b) for p in split for a, b in zip(p, p[1:], strict=False)]
    if len(flat) < 3 or not adjacent:
        return None
    every = sorted(overlap(a, b) for i, a in enumerate(flat) for b in flat[i + 1:])
    return sum((bisect_left(every, v) + (bisect_right(every, v) - bisect_left(every, v)) / 2) / len(every)
               for v in adjacent) / len(adjacent)


# Words by which a first-person sentence sets the paper beside a work ("Unlike [R3], we ..."): the paper's voice,
# never a copy of the cited work's. ("our" is not among them: a cited work's abstract says "our method" too.)
_CONTRAST = re.compile(r"\b(?:unlike|in\s+contrast|contrary|whereas|instead|rather\s+than|differ\w*|similar\w*\s+to|"
                       r"extend\w*|build(?:s|ing)?\s+(?:on|upon)|built\s+(?:on|upon)|follow\w*|inspired|"
                       r"compared\s+(?:to|with))\b", re.IGNORECASE)


def section_sentences(text: str) -> list[str]:
    """The sentences of every paragraph (:func:`crewlib.eval.relating.split_sentences`: "et al." kept whole, a
    lowercased section split at its stops)."""
    return [s for p in paragraphs(text) for s in split_sentences(p)]


def voice_copies(text: str, sources: Mapping[str, str]) -> int:
    """First-person sentences in a cited work's voice: the words of one work the sentence cites (citing none, of
    any work) make up :data:`crewlib.positioning.COPIED_VOICE` of it, and it does not set the paper beside the work
    ("Unlike [R3], we ..."). The paper's own "we", which a related-work section uses to position itself, is not
    counted."""
    found = 0
    for s in section_sentences(text):
        if not is_first_person(s) or _CONTRAST.search(strip_markers(s)):
            continue
        keys = _known_keys(s, sources)
        found += copies_cited_voice(s, [sources[k] for k in keys] if keys else list(sources.values()))
    return found


def uncited_claims(text: str, title: str) -> int:
    """Sentences that make a claim about specific work (:func:`crewlib.sections.makes_claim`) and cite nothing in
    any form (keys, numbers, author–year), leaving out the paper's own positioning statements
    (:func:`crewlib.positioning.refers_to_paper`), which rest on the paper, not on a citation."""
    return sum(makes_claim(s) and not citation_spans(s) and not refers_to_paper(s, title)
               for s in section_sentences(text))


def repeated_sentences(text: str, threshold: float) -> int:
    """Sentences that say what an earlier sentence of the section says (:func:`crewlib.sections.repeats_sentence`)."""
    sents = section_sentences(text)
    return sum(any(repeats_sentence(s, e, threshold) for e in sents[:i]) for i, s in enumerate(sents))


def cited_support(text: str, sources: Mapping[str, str]) -> list[float]:
    """The lexical support of each sentence (:func:`section_sentences`) citing a known work, by the evidence of the
    works it cites (:func:`crewlib.sections.support_scores` on the evaluation's sentence split)."""
    return [_support(s, keys, sources) for s in section_sentences(text) if (keys := _known_keys(s, sources))]


def saturated_support(values: Sequence[float], threshold: float) -> float:
    """Mean lexical support of the cited sentences, each counted up to ``threshold`` (the support a cited sentence
    needs): a paraphrase that reaches it scores what a near-copy of the abstract scores (copying is measured apart,
    ``copied_sentences_rate``); 0 without a cited sentence."""
    return sum(min(v, threshold) / threshold for v in values) / len(values) if values else 0.0


def citation_content(text: str, words: int) -> float | None:
    """:func:`crewlib.eval.relating.content_per_citation` on [0, 1]: content words per cited work over ``words``
    (``eval.citation_content_words``), at most 1; None when nothing is cited."""
    value = content_per_citation(text)
    return None if value is None else min(1.0, value / words)
