"""Measures that tell a related-work section from an annotated bibliography (issue 45; docs/method.md, "Relating
measures").

A related-work section selects, organises and frames prior work "to clarify how a target paper relates to, differs
from, and contributes beyond existing research" (RWGBench). An annotated bibliography lists one work per sentence
and never says how the works relate to each other or to the paper. Each measure below is a pure function of the
section's text (paragraphs split by blank lines) and what it needs; each returns a float, or None when it is not
defined for the text:

- :func:`positioning` — positioning sentences per reading unit, at most 1: a sentence that relates the works to the
  target paper and that the paper's own text supports (:func:`crewlib.positioning.is_positioning`, the definition
  the output checks use); :func:`positioning_any` — the rough count: a sentence that speaks of the paper at all, no
  support asked;
- :func:`synthesis` — synthesis sentences per reading unit, at most 1: a sentence that cites two works or more and
  says something about them (≥ :data:`SYNTHESIS_STEMS` content stems beyond the words of relation; when the works'
  texts are known, supported by them);
- :func:`theme_coherence` — share of works closer (TF-IDF cosine of their texts) to their own paragraph's works
  than to the other paragraphs' works;
- :func:`content_per_citation` — mean content words per cited work over citing sentences (raw, not in [0, 1]).

A **reading unit** is ``unit_sentences`` sentences of the section (``eval.paragraph_sentences``, a paragraph's
length): a section of n sentences holds ⌈n / unit_sentences⌉ of them, however it is cut into paragraphs and in
whatever order its sentences come (instrument version 5). Version 4 counted the share of *paragraphs* holding such
a sentence, which rewarded a section for being merged into one paragraph (one positioning sentence then covers it
all) or for dealing one theme's sentences across the others; order and paragraphing are measured apart
(``coherence``, ``paragraphing``, :func:`theme_coherence`).

Citations are read by :func:`crewlib.citations.citation_groups` — keys ``[R3]``, numbers ``[3-5]``, author–year
``(Smith et al., 2018)`` / ``Smith et al. (2018)``, the lowercased ``(barzilay and mckeown 2001)`` — so the measures
apply to human gold sections as they are written as well as to systems' outputs. A work is named by its normalised
string (``r3``, ``12``, ``smith 2018``); ``works_text`` maps those names (case-insensitive) to the works' texts.

A paragraph that cites nothing (a heading, a closing "In this work, we ..." paragraph) belongs to the paragraph
before it (the first such paragraphs to the first citing one): a positioning paragraph closes the theme it follows.
A section that cites nothing keeps its paragraphs as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from crewlib.citations import citation_spans, is_lowercased
from crewlib.positioning import claim_stems, copies_cited_voice, is_positioning, refers_to_paper
from crewlib.sections import is_meta, paragraphs
from crewlib.tasks import Task
from crewlib.text import content_words, sentences, strip_markers, support

SYNTHESIS_STEMS = 6  # content stems, beyond the words of relation, that a sentence citing several works must hold
MEASURES = ("positioning", "positioning_any", "synthesis", "theme_coherence", "content_per_citation")

# Abbreviations whose full stop ends no sentence ("Smith et al. (2018) show", "e.g. BLEU", "Fig. 2").
_ABBREVIATION = re.compile(r"\b(?:et\s*al|e\s*\.\s*g|i\s*\.\s*e|cf|vs|fig|figs|eq|eqs|sec|secs|tab|no|resp|approx|"
                           r"mr|mrs|dr|prof|st)\.", re.IGNORECASE)
_MASK = "\u2024"  # ONE DOT LEADER: stands for the abbreviations' full stops while sentences are split
# A sentence about the section itself, not the paper ("In this section, we review ...", "We first briefly review").
_ROADMAP = re.compile(
    r"\bthis\s+section\b|^\W*(?:(?:first|next|then|here|below|in\s+what\s+follows),?\s+)?(?:we|i)\s+(?:will\s+)?"
    r"(?:(?:first|then|next|briefly|now|also|shortly)\s+)*(?:review|discuss|survey|summari[sz]e|introduce|describe|"
    r"outline|overview|cover|present)\b",
    re.IGNORECASE,
)
_HEADING_WORDS = 10  # a line this short without closing punctuation is a heading: a sentence of its own


@dataclass(frozen=True)
class Sentence:
    text: str  # as written
    bare: str  # its citations cut out
    works: tuple[str, ...]  # distinct works it cites, in order

    @property
    def roadmap(self) -> bool:
        """The sentence announces the section ("In this section, we review ...") rather than relate the paper."""
        return bool(_ROADMAP.search(self.bare)) or is_meta(self.bare)


@dataclass(frozen=True)
class Paragraph:
    sentences: tuple[Sentence, ...]

    @property
    def works(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w for s in self.sentences for w in s.works))


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph: :func:`crewlib.text.sentences` with abbreviations' stops ("et al.", "e.g.")
    protected; in a text with no capital letter (RWSData's lowercased sections) at every ``. `` / ``? `` / ``! ``;
    a short line without closing punctuation (a heading) is a sentence of its own."""
    lower = is_lowercased(text)
    masked = _ABBREVIATION.sub(lambda m: m.group(0)[:-1] + _MASK, text)
    chunks: list[str] = []
    block: list[str] = []
    for line in masked.splitlines():
        words = line.split()
        if words and len(words) <= _HEADING_WORDS and not re.search(r"[.!?:;,)\]\"']\W*$", line):
            chunks += [" ".join(block), line] if block else [line]
            block = []
        else:
            block.append(line)
    chunks.append(" ".join(block))
    found: list[str] = []
    for chunk in chunks:
        if not chunk.strip():
            continue
        parts = re.split(r"(?<=[.!?])\s+", chunk.strip()) if lower else sentences(chunk)
        found += [p.replace(_MASK, ".").strip() for p in parts if p.strip()]
    return found


def parse_sentence(text: str, lower: bool) -> Sentence:
    """A sentence as written, with its citations cut out (spaces collapsed) and the works it cites
    (:func:`crewlib.citations.citation_spans`; ``lower``: read lower-case author names)."""
    spans = citation_spans(text, lower)
    bare, at = [], 0
    for start, end, _ in spans:
        bare.append(text[at:start])
        at = end
    bare.append(text[at:])
    works = tuple(dict.fromkeys(w for _, _, group in spans for w in group))
    return Sentence(text, " ".join(strip_markers("".join(bare)).split()), works)


def section_paragraphs(text: str) -> list[Paragraph]:
    """The section's paragraphs (split by blank lines) as cited sentences; a paragraph that cites nothing joins the
    citing paragraph before it (the first ones: the first citing one), unless the section cites nothing at all."""
    lower = is_lowercased(text)
    parsed = [tuple(parse_sentence(s, lower) for s in split_sentences(p)) for p in paragraphs(text)]
    parsed = [p for p in parsed if p]
    if not any(s.works for p in parsed for s in p):
        return [Paragraph(p) for p in parsed]
    merged: list[list[Sentence]] = []
    waiting: list[Sentence] = []  # uncited paragraphs before the first citing one
    for para in parsed:
        if any(s.works for s in para):
            merged.append([*waiting, *para])
            waiting = []
        elif merged:
            merged[-1] += para
        else:
            waiting += para
    return [Paragraph(tuple(p)) for p in merged]


def _texts(works_text: Mapping[str, str] | None) -> dict[str, str]:
    return {str(k).strip().lower(): v for k, v in (works_text or {}).items() if v and v.strip()}


def _share(hits: list[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def per_unit(found: int, sentences: int, unit_sentences: int) -> float | None:
    """``found`` sentences per reading unit of ``unit_sentences`` (module docstring), at most 1: a section of
    ``sentences`` sentences holds ⌈sentences / unit_sentences⌉ units; None for a section without a sentence."""
    if unit_sentences < 1:
        raise ValueError(f"unit_sentences must be at least 1, not {unit_sentences}")
    return min(1.0, found / -(-sentences // unit_sentences)) if sentences else None


def _sentence_count(paras: list[Paragraph]) -> int:
    return sum(len(p.sentences) for p in paras)


def positioning(text: str, title: str, paper_text: str, works_text: Mapping[str, str] | None, threshold: float,
                unit_sentences: int) -> float | None:
    """Positioning sentences per reading unit (:func:`per_unit`): sentences for which
    :func:`crewlib.positioning.is_positioning` holds, their citations cut out, with ``works_texts`` the known texts
    of the works their paragraph cites (a first-person sentence copied from one of them is their authors' voice).
    Roadmap sentences ("In this section, we review ...") do not count. None without the paper's text
    (``paper_text``: abstract and introduction) or without a sentence; ``threshold``: the output checks'
    ``support_threshold``; ``unit_sentences``: ``eval.paragraph_sentences``."""
    if not paper_text or not paper_text.strip():
        return None
    texts = _texts(works_text)
    paras = section_paragraphs(text)
    found = 0
    for para in paras:
        known = [texts[w] for w in para.works if w in texts]
        found += sum(not s.roadmap and is_positioning(s.bare, title, paper_text, known, threshold, bool(s.works))
                     for s in para.sentences)
    return per_unit(found, _sentence_count(paras), unit_sentences)


def positioning_any(text: str, title: str = "", works_text: Mapping[str, str] | None = None, *,
                    unit_sentences: int) -> float | None:
    """The rough count, per reading unit (:func:`per_unit`): sentences that speak of the paper itself
    (:func:`crewlib.positioning.refers_to_paper`: "this paper", "our", "we", the paper's short name), roadmap
    sentences left out; no support is asked. With ``works_text``, a sentence in the voice of a work its paragraph
    cites (:func:`crewlib.positioning.copies_cited_voice`) does not count; without it, a copied "we" counts. None
    without a sentence."""
    texts = _texts(works_text)
    paras = section_paragraphs(text)
    found = sum(not s.roadmap and refers_to_paper(s.bare, title)
                and not copies_cited_voice(s.bare, [texts[w] for w in para.works if w in texts])
                for para in paras for s in para.sentences)
    return per_unit(found, _sentence_count(paras), unit_sentences)


def _synthesises(sentence: Sentence, texts: dict[str, str] | None, threshold: float) -> bool:
    if len(sentence.works) < 2 or len(claim_stems(sentence.bare)) < SYNTHESIS_STEMS:
        return False
    if texts is None:
        return True
    known = [texts[w] for w in sentence.works if w in texts]
    return not known or support(sentence.bare, " ".join(known)) >= threshold


def synthesis(text: str, works_text: Mapping[str, str] | None, threshold: float, unit_sentences: int) -> float | None:
    """Synthesis sentences per reading unit (:func:`per_unit`): sentences that cite two distinct works or more and
    say something about them — their content stems (citations cut out), the words of relation left out
    (:func:`crewlib.positioning.claim_stems`), number ≥ :data:`SYNTHESIS_STEMS`; and, when ``works_text`` is given,
    the texts of the cited works they hold support them (:func:`crewlib.text.support` ≥ ``threshold``). A sentence
    none of whose works has a known text is judged on its words alone. None for a section citing fewer than two
    distinct works."""
    texts = None if works_text is None else _texts(works_text)
    paras = section_paragraphs(text)
    if len({w for p in paras for w in p.works}) < 2:
        return None
    found = sum(_synthesises(s, texts, threshold) for para in paras for s in para.sentences)
    return per_unit(found, _sentence_count(paras), unit_sentences)


def theme_coherence(text: str, works_text: Mapping[str, str] | None) -> float | None:
    """Works grouped by theme: for each cited work with a known text in a paragraph with two such works or more,
    whether its mean TF-IDF cosine (over the cited works' texts, English stop words out) to its paragraph's other
    works exceeds its mean cosine to the works the other paragraphs cite (and its own does not); the share of works
    for which it does. None for a section with fewer than two paragraphs citing works with known texts."""
    texts = _texts(works_text)
    groups = [[w for w in para.works if w in texts] for para in section_paragraphs(text)]
    groups = [g for g in groups if g]
    if len(groups) < 2:
        return None
    from sklearn.feature_extraction.text import TfidfVectorizer

    names = list(dict.fromkeys(w for g in groups for w in g))
    try:
        matrix = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform([texts[w] for w in names])
    except ValueError:  # no word left after stop words
        return None
    cosine = (matrix @ matrix.T).toarray()
    index = {w: i for i, w in enumerate(names)}
    hits = []
    for i, group in enumerate(groups):
        if len(group) < 2:
            continue
        others = list(dict.fromkeys(w for j, g in enumerate(groups) if j != i for w in g if w not in group))
        if not others:
            continue
        for work in group:
            same = [cosine[index[work], index[w]] for w in group if w != work]
            away = [cosine[index[work], index[w]] for w in others]
            hits.append(bool(sum(same) / len(same) > sum(away) / len(away)))
    return _share(hits)


def content_per_citation(text: str) -> float | None:
    """Mean, over the sentences that cite, of the sentence's content words (:func:`crewlib.text.content_words`,
    citations cut out) per distinct work it cites — raw, not in [0, 1]: a sentence per work gives its length in
    content words; a list "Several approaches have been proposed [R1, R2, R3]." gives 4/3. None when nothing is
    cited."""
    values = [len(content_words(s.bare)) / len(s.works) for para in section_paragraphs(text)
              for s in para.sentences if s.works]
    return sum(values) / len(values) if values else None


def relating_scores(text: str, title: str, paper_text: str, works_text: Mapping[str, str] | None,
                    threshold: float, unit_sentences: int) -> dict[str, float | None]:
    """All the relating measures of a section, under :data:`MEASURES`' names; ``unit_sentences``: the reading
    unit's length (``eval.paragraph_sentences``)."""
    return {
        "positioning": positioning(text, title, paper_text, works_text, threshold, unit_sentences),
        "positioning_any": positioning_any(text, title, works_text, unit_sentences=unit_sentences),
        "synthesis": synthesis(text, works_text, threshold, unit_sentences),
        "theme_coherence": theme_coherence(text, works_text),
        "content_per_citation": content_per_citation(text),
    }


def task_relating(text: str, task: Task, threshold: float, unit_sentences: int) -> dict[str, float | None]:
    """:func:`relating_scores` of a section written for ``task``: the paper's text is its abstract (with the
    introduction a user gave, :func:`crewlib.data.records.with_introduction`), each work's text its title and
    abstract under its key. In the demo's and ``crew write``'s ``summary.json`` and the quality benchmark."""
    works = {key: f"{ref.title}. {ref.abstract}" for key, ref in task.reference_by_key.items()}
    return relating_scores(text, task.title, task.abstract, works, threshold, unit_sentences)


__all__ = ["MEASURES", "SYNTHESIS_STEMS", "Paragraph", "Sentence", "content_per_citation", "parse_sentence",
           "per_unit", "positioning", "positioning_any", "relating_scores", "section_paragraphs", "split_sentences",
           "synthesis", "task_relating", "theme_coherence"]
