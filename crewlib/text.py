"""Text helpers shared by the environment, the baselines and the evaluation: tokens, sentences, support."""

from __future__ import annotations

import math
import re
from difflib import SequenceMatcher
from functools import lru_cache

_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[(])")
_MARKERS = re.compile(r"\s*\[[^\[\]]*\]")
# A number a sentence states: not part of a name or key ("GPT-3", "T5", "[R2]"), not a year; "6x", "45%" count.
_NUMBER = re.compile(r"(?<![\w.\-/])(\d+(?:\.\d+)?)(?=x\b|%|-|\s|[,.;:)]|$)(?!\.\d)")
_YEAR = re.compile(r"^(?:19|20)\d{2}$")
STOPWORDS = frozenset([
    "a", "an", "the", "of", "and", "or", "in", "on", "for", "to", "with", "by", "from", "as", "at", "is", "are",
    "was", "were", "be", "been", "this", "that", "these", "those", "it", "its", "their", "they", "we", "our",
    "which", "who", "whom", "whose", "than", "then", "also", "such", "can", "may", "not", "but", "into", "over",
    "under", "between",
])


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased alphanumeric tokens (the reward's 'normalised tokens', docs/method.md)."""
    return tuple(_TOKEN.findall(text.lower()))


@lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    return frozenset(t for t in tokens(strip_markers(text)) if t not in STOPWORDS and len(t) > 2)


_LOWER_START = re.compile(r"(?<![.\w]\.\w)(?<!\bal)(?<!\bvs)(^|[.!?]\s+)([a-z])")


def sentence_case(text: str) -> str:
    """Sentences that start lower-case start upper-case ("the authors adapt ... [R1]. a model ..." → "The authors
    adapt ... [R1]. A model ..."; the 1.5B writes them so, and :func:`sentences` splits only before a capital);
    not after "e.g.", "i.e.", "et al.", "vs."."""
    return _LOWER_START.sub(lambda m: f"{m.group(1)}{m.group(2).upper()}", text.strip())


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def numbers(text: str) -> list[re.Match]:
    """The numbers ``text`` states (matches, group 1 the number): years and the digits of names and keys left out."""
    return [m for m in _NUMBER.finditer(text) if not _YEAR.match(m.group(1))]


def strip_markers(text: str) -> str:
    return _MARKERS.sub("", text)


def containment(claim: str, evidence: str) -> float:
    """Share of the claim's content words found in the evidence (0 for an empty claim)."""
    words = content_words(claim)
    return len(words & content_words(evidence)) / len(words) if words else 0.0


def word_count(text: str) -> int:
    return len(text.split())


def fit_words(text: str, words: int) -> tuple[str, bool]:
    """``text`` within ``words`` words, cut at whole sentences, and whether it was cut.

    An unfinished last sentence (an answer stopped by its token limit) is dropped; a first sentence
    longer than the limit alone keeps its first ``words`` words.
    """
    parts = sentences(text)
    cut = False
    if len(parts) > 1 and not re.search(r"[.!?][\"')\]]*$", parts[-1]):
        parts, cut = parts[:-1], True
    kept: list[str] = []
    for sentence in parts:
        if word_count(" ".join([*kept, sentence])) > words:
            cut = True
            break
        kept.append(sentence)
    if not kept and parts:
        return " ".join(parts[0].split()[:words]), True
    return " ".join(kept), cut


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (≈ 4 characters per token for English), used for context budgets."""
    return math.ceil(len(text) / 4)


STEM_CHARS = 5  # words compared by their first five letters: "pretrains" ~ "pretraining", "models" ~ "model"


@lru_cache(maxsize=65536)
def stems(text: str) -> frozenset[str]:
    """The content words of ``text`` cut to :data:`STEM_CHARS` letters (a crude, language-model-free stemmer)."""
    return frozenset(w[:STEM_CHARS] for w in content_words(text))


def support(claim: str, evidence: str) -> float:
    """Lexical support: share of the claim's content stems found in the evidence (0 for an empty claim)."""
    words = stems(claim)
    return len(words & stems(evidence)) / len(words) if words else 0.0


COPY_SHARE = 0.9  # share of a sentence's characters, in order, that makes it a near-verbatim copy of a source sentence


@lru_cache(maxsize=64)  # the works of a task or two; full texts make large prefix sets
def _word_pieces(evidence: str) -> tuple[frozenset[str], frozenset[str]]:
    """The evidence's words, and the starts of its words (three letters or more, two short of the word or more)."""
    vocabulary = frozenset(tokens(evidence))
    return vocabulary, frozenset(w[:i] for w in vocabulary for i in range(3, len(w) - 1))


def _broken(word: str, vocabulary: frozenset[str], starts: frozenset[str]) -> bool:
    """``word`` is a piece of the vocabulary's words: the start of a longer one ("cap" for "capture"), or one
    run into another or its start ("andsent": "and" + "sentences"); an inflection ("models") is no piece."""
    return word in starts or any(word[:i] in vocabulary and (word[i:] in starts or word[i:] in vocabulary)
                                 for i in range(2, len(word) - 2))


def slipped_copy(claim: str, evidence: str) -> str | None:
    """The sentence of ``evidence`` that ``claim`` copies nearly verbatim (at least :data:`COPY_SHARE` of its
    characters, in order, half of them in one run) but with a word broken off — a small model's slip while
    copying ("hierarchical attention over words andsent", "Analysis suggests lower layers cap") — else None.
    A word the evidence lacks that is whole (a spelling, an abbreviation, a paraphrase) is no slip."""
    vocabulary, starts = _word_pieces(evidence)
    if not any(_broken(word, vocabulary, starts) for word in set(tokens(strip_markers(claim))) - vocabulary):
        return None
    text = " ".join(strip_markers(claim).split()).lower()
    for source in sentences(evidence):
        matcher = SequenceMatcher(None, text, source.lower(), autojunk=False)
        if matcher.quick_ratio() * (len(text) + len(source)) / 2 < COPY_SHARE * len(text):
            continue  # not enough characters in common, whatever their order
        blocks = [block.size for block in matcher.get_matching_blocks()]
        if sum(blocks) >= COPY_SHARE * len(text) and max(blocks) >= len(text) / 2:  # a copy, not scattered letters
            return source
    return None
