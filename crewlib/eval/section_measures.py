"""Measures of a finished section's text used only by the evaluation: copied runs, stated numbers, paragraphing
and local coherence (crewlib.eval.suite's ``grounding`` group; docs/method.md, "Grounding")."""

from __future__ import annotations

from collections.abc import Mapping

from crewlib.sections import _known_keys, overlap, paragraphs
from crewlib.text import numbers, sentences, strip_markers, tokens


def copied_sentences(text: str, sources: Mapping[str, str], min_words: int) -> int:
    """Sentences that copy a run of ``min_words`` consecutive words or more from one of ``sources`` (a reviewer
    rejects text pasted from an abstract, cited or not)."""
    runs = {gram for body in sources.values() for gram in _ngrams(tokens(strip_markers(body)), min_words)}
    return sum(bool(_ngrams(tokens(strip_markers(s)), min_words) & runs)
               for p in paragraphs(text) for s in sentences(p))


def _ngrams(words: tuple[str, ...], n: int) -> set[tuple[str, ...]]:
    return {words[i:i + n] for i in range(len(words) - n + 1)}


def number_support(text: str, sources: Mapping[str, str]) -> float | None:
    """Of the numbers the sentences citing a known work state (:func:`crewlib.text.numbers`), the share its cited
    works' evidence states too; None when no cited sentence states a number."""
    found = []
    for s in (s for p in paragraphs(text) for s in sentences(p)):
        stated = numbers(s)
        if stated and (keys := _known_keys(s, sources)):
            evidence = {e.group(1) for e in numbers(" ".join(sources[k] for k in keys))}
            found += [m.group(1) in evidence for m in stated]
    return sum(found) / len(found) if found else None


def paragraphing(text: str, sentences_per_paragraph: int) -> float | None:
    """Whether the text is cut into paragraphs: paragraphs × ``sentences_per_paragraph`` / sentences, at most 1
    (one block of twelve sentences scores 5/12 at five a paragraph); None for an empty text."""
    blocks = paragraphs(text)
    n = sum(len(sentences(b)) for b in blocks)
    return min(1.0, len(blocks) * sentences_per_paragraph / n) if n else None


def local_coherence(text: str) -> float | None:
    """How much each sentence says about what the one before it said, within a paragraph: the mean content-word
    overlap (:func:`overlap`) of adjacent sentences; None for a text without two sentences in one paragraph.
    A lexical variant of local coherence (Foltz, Kintsch and Landauer 1998: adjacent-sentence similarity)."""
    pairs = [(a, b) for p in paragraphs(text) for a, b in zip(sentences(p), sentences(p)[1:], strict=False)]
    return sum(overlap(a, b) for a, b in pairs) / len(pairs) if pairs else None
