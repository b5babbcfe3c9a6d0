"""The forms in which Compose asks for a paragraph (``executor.compose_form``), as answer schemas.

- ``paragraph``: one free text that must cite the works it is written from (:func:`compose_schema`; revisions
  always are);
- ``sentences``: (key, sentence) pairs, each sentence citing its work by construction (:func:`sentences_schema`);
- ``themed``: one theme a paragraph, with its comparison and its closing sentence on the paper
  (:mod:`crewlib.env.themed_compose`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar, Literal

import pydantic

from crewlib.citations import KEY_GROUP, find_citation_keys
from crewlib.sections import cite_sentence, is_meta
from crewlib.text import sentences

Confidence = pydantic.confloat(ge=0.0, le=1.0)

# Characters a free-text field may hold under constrained decoding (``max_chars``, crewlib.llm.client.schema_format):
# about 1.5 times what its instruction asks for, so that a model that rambles is stopped with a closed string.
CHARS_PER_WORD = 9
NOTE_CHARS = 320      # one or two sentences
FEEDBACK_CHARS = 320  # one or two sentences
REVISION_WORDS = 100  # prompts.REVISE: "at most 100 words"


class ComposeOut(pydantic.BaseModel):
    segment_id: int | None = None
    text: str = pydantic.Field(min_length=20)
    resolves: list[int] = []
    confidence: Confidence = 0.5


_MARKER_AFTER_STOP = re.compile(rf"([.!?])\s*((?:{KEY_GROUP}\s*)+)")
# ... the same, but not a marker that opens the next sentence ("... details. [R1] uses ...")
_MARKER_CLOSING = re.compile(_MARKER_AFTER_STOP.pattern + r"(?=$|[A-Z\"'(.!?])")


def one_paragraph(text: str, keep_opening_markers: bool = True) -> str:
    """A composed paragraph as one paragraph: line breaks joined, ``... parameters. [R1]`` → ``... parameters [R1].``

    ``keep_opening_markers`` (``executor.keep_opening_markers``): a marker that opens a sentence stays ("...
    details. [R1] uses X"); off, it moves into the sentence before ("... details [R1]. uses X"), the rule the
    notebooks' shipped answers were recorded with.
    """
    text = " ".join(text.split())
    pattern = _MARKER_CLOSING if keep_opening_markers else _MARKER_AFTER_STOP
    return pattern.sub(lambda m: f" {m.group(2).strip()}{m.group(1)} ", text).strip()


ATTRIBUTION_CONTAINMENT = 0.5  # share of a sentence's content words a source's text must hold to be its source


def attribute_sentences(text: str, sources: Mapping[str, str]) -> tuple[str, int]:
    """``text`` with each sentence that cites nothing given the key of the source (key → its notes and text)
    holding most of its content words, when that share reaches :data:`ATTRIBUTION_CONTAINMENT`; and how many
    sentences got a key."""
    from crewlib.text import containment

    out, added = [], 0
    for sent in sentences(text):
        if not find_citation_keys(sent) and sources:
            share, key = max((containment(sent, body), key) for key, body in sorted(sources.items()))
            if share >= ATTRIBUTION_CONTAINMENT:
                sent = cite_sentence(sent, key)
                added += 1
        out.append(sent)
    return " ".join(out), added


def compose_length(n_sources: int) -> tuple[str, int]:
    """(sentences, words) a new paragraph on ``n_sources`` works is asked for: one sentence and 30 words a work."""
    return f"{n_sources} or {n_sources + 1}", 30 * n_sources


def compose_schema(allowed: frozenset[str], sources: Mapping[str, str] | None = None,
                   max_words: int = REVISION_WORDS, salvage: bool = False) -> type[ComposeOut]:
    """ComposeOut whose paragraph must cite the works it is about, only those, and not talk about the writing;
    a violation is re-asked once with the reason (the client's re-ask), then a counted no-op. Under constrained
    decoding the text holds at most ``max_words`` × :data:`CHARS_PER_WORD` characters.

    ``sources`` (key → the notes and text of a work the paragraph is written from; ``executor.attribute_uncited``):
    a paragraph that cites nothing first gets each sentence's key by :func:`attribute_sentences`; the number of
    sentences so attributed in the last answer validated is the class's ``attributed`` (not a field: the schema
    the model is shown stays the same).

    ``salvage`` (``executor.salvage_paragraphs``): the sentences that cite keys the paragraph was not given, and
    those about the writing, are dropped (their number is the class's ``dropped``) when a sentence citing a given
    key remains, instead of the whole answer being re-asked and, invalid again, lost.
    """

    class Paragraph(ComposeOut):
        attributed: ClassVar[int] = 0
        dropped: ClassVar[int] = 0
        max_chars: ClassVar[dict[str, int]] = {"text": max_words * CHARS_PER_WORD}

        @pydantic.model_validator(mode="after")
        def _cites_its_works(self) -> Paragraph:
            keys = set(find_citation_keys(self.text))
            type(self).attributed = type(self).dropped = 0
            if salvage and (keys - allowed or any(is_meta(s) for s in sentences(self.text))):
                kept = [s for s in sentences(self.text) if not set(find_citation_keys(s)) - allowed and not is_meta(s)]
                if any(find_citation_keys(s) for s in kept):
                    type(self).dropped = len(sentences(self.text)) - len(kept)
                    self.text = " ".join(kept)
                    keys = set(find_citation_keys(self.text))
            if not keys and sources:
                self.text, type(self).attributed = attribute_sentences(self.text, sources)
                keys = set(find_citation_keys(self.text))
            if not keys:
                raise ValueError(f"the paragraph cites nothing; cite each claim with its key: {sorted(allowed)}")
            if keys - allowed:
                raise ValueError(f"the paragraph cites keys it was not given: {sorted(keys - allowed)}; "
                                 f"use only {sorted(allowed)}")
            meta = [s for s in sentences(self.text) if is_meta(s)]
            if meta:
                raise ValueError(f"remove the sentence about the writing process: {meta[0][:80]!r}")
            return self

    Paragraph.__name__ = "ComposeOut"
    return Paragraph


def with_citation(sentence: str, key: str) -> str:
    """``sentence`` citing ``key``: as it is when it cites it already, else with ``[key]`` before its stop."""
    bare = sentence.rstrip().rstrip(",;:").rstrip()
    if key in find_citation_keys(sentence):
        return bare if bare.endswith((".", "!", "?", '"')) else f"{bare}."
    stop = bare[-1] if bare and bare[-1] in ".!?" else "."
    return f"{bare.rstrip('.!?').rstrip()} [{key}]{stop}"


def sentences_schema(allowed: frozenset[str]) -> type[pydantic.BaseModel]:
    """A new paragraph as (key, text) pairs (``executor.compose_form: sentences``): the key can only be one of
    ``allowed``, so every sentence cites the work it is about by construction. Its ``text`` property is the
    paragraph; a sentence that also cites a key not given, or talks about the writing, is dropped (the class's
    ``dropped``), and an answer with no sentence left is invalid (re-asked once by the client)."""
    keys = tuple(sorted(allowed, key=lambda k: (len(k), k)))

    class Sentence(pydantic.BaseModel):
        key: Literal[keys]  # type: ignore[valid-type]
        text: str = pydantic.Field(min_length=10)

    class SentencesOut(pydantic.BaseModel):
        sentences: list[Sentence] = pydantic.Field(min_length=1, max_length=2 * len(keys))
        confidence: Confidence = 0.5
        max_chars: ClassVar[dict[str, int]] = {"text": NOTE_CHARS}
        dropped: ClassVar[int] = 0
        resolves: ClassVar[list[int]] = []
        _text: str = pydantic.PrivateAttr("")

        @property
        def text(self) -> str:
            return self._text

        @pydantic.model_validator(mode="after")
        def _cites_its_works(self) -> SentencesOut:
            kept, dropped = [], 0
            for item in self.sentences:
                for sent in sentences(item.text):
                    if set(find_citation_keys(sent)) - allowed or is_meta(sent):
                        dropped += 1
                    else:
                        kept.append(with_citation(sent, item.key))
            if not kept:
                raise ValueError(f"no sentence left: write about the works {list(keys)} only, one or two sentences "
                                 f"each, and nothing about the writing")
            type(self).dropped = dropped
            self._text = " ".join(kept)
            return self

    SentencesOut.__name__ = "ComposeOut"
    return SentencesOut
