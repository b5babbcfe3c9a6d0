"""Compose a paragraph as one theme that relates to the paper (``executor.compose_form: themed``; docs/method.md,
"A paragraph that relates").

The answer's JSON schema holds the paragraph's parts, so that its structure is guaranteed, not hoped for:

- ``theme`` — the name the composer gives the theme (2 to 6 words, recorded in the trace);
- ``topic`` — the opening sentence naming the theme (citations removed: it introduces, it claims nothing); one
  that is no sentence (shorter than six words, no main verb, the theme's name or the paper's title again) becomes
  "Several works address <theme>." (counted: ``topics_replaced``);
- ``works`` — one field per work of the theme, named by its key and required: one or two sentences on that work,
  each cited with its key, so that every work gets its sentences and every sentence cites its work;
- ``comparison`` and ``comparison_keys`` — where the theme has two works or more, one sentence comparing or
  grouping them, cited with each work it names (two at least; one that names fewer is dropped, counted);
- ``relation`` (builds_on | differs | addresses_gap) and ``position`` — the closing sentence on how the paper
  stands to these works. It must speak of the paper ("This paper ...") and say only what the paper's own
  title, abstract or introduction says (:func:`crewlib.positioning.supported_relation`, the support
  threshold of cited sentences) and repeat neither an earlier closing nor a sentence on a work; else it is
  replaced by :func:`fallback_position`, built from the paper's own sentence closest to the works (counted:
  ``positions_replaced``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal

import pydantic

from crewlib.citations import find_citation_keys
from crewlib.positioning import refers_to_paper, relates_works, supported_relation
from crewlib.sections import CLOSING_REPEAT, as_work, is_meta, repeats_sentence
from crewlib.sentence_form import lacks_main_verb
from crewlib.text import content_words, sentences, stems, strip_markers, support

RELATIONS = ("builds_on", "differs", "addresses_gap")
# How the fallback closing sentence opens, by relation (the paper's own sentence follows).
RELATION_OPENINGS = {"builds_on": "Building on these works", "differs": "Unlike these works",
                     "addresses_gap": "Going beyond what these works leave open"}
THEME_CHARS, SENTENCE_CHARS = 60, 320
REPEAT_OVERLAP = CLOSING_REPEAT  # a closing sentence repeats an earlier one (as the output checks judge it)
TOPIC_WORDS = 6  # a topic sentence shorter than this is a theme's name, not a sentence


def _bracketed(text: str, allowed: frozenset[str]) -> str:
    """Keys the model wrote bare ("ROUGE and R6 both ...") as citations ("ROUGE and [R6] both ..."), outside the
    citations it wrote."""
    parts = re.split(r"(\[[^\[\]]*\])", text)
    bare = re.compile(r"\b(R\d+)\b")
    return "".join(part if part.startswith("[") else bare.sub(lambda m: f"[{m.group(1)}]" if m.group(1) in allowed
                                                               else m.group(1), part) for part in parts)


def _closed(text: str) -> str:
    text = " ".join(text.split()).strip()
    return text if text.endswith((".", "!", "?")) else f"{text.rstrip(',;:')}."


def _cited(text: str, keys: list[str]) -> str:
    """``text`` citing each of ``keys``: the markers it holds stay where they are ("Unlike [R2], [R5] ..."), the
    keys it does not cite yet go before its stop."""
    text = _closed(text)
    missing = [k for k in keys if k not in find_citation_keys(text)]
    return f"{text[:-1].rstrip()} [{', '.join(missing)}]{text[-1]}" if missing else text


def paper_sentences(paper_text: str) -> list[str]:
    """The paper's own sentences that speak of it (we, this paper, our ...), in order; the introduction's
    "From the introduction:" label removed."""
    text = paper_text.replace("From the introduction:", " ")
    return [s for s in sentences(" ".join(text.split())) if refers_to_paper(s) and len(content_words(s)) >= 4]


def _repeats(sentence: str, earlier: Sequence[str]) -> bool:
    return any(repeats_sentence(sentence, e, REPEAT_OVERLAP) for e in earlier)


def fallback_position(relation: str, paper_text: str, works_text: str, earlier: Sequence[str] = ()) -> str | None:
    """A closing sentence from the paper's own words: its sentence about itself that shares the most content
    stems with the works (the first one on a tie) and that no ``earlier`` closing repeats, opened by the relation
    ("Unlike these works, we ..."); None when the paper's text has no such sentence."""
    own = [s for s in paper_sentences(paper_text) if not _repeats(s, earlier)]
    if not own:
        return None
    works = stems(works_text)
    best = max(own, key=lambda s: (len(stems(s) & works), -own.index(s)))
    best = strip_markers(best).strip()
    best = re.sub(r"^(?:In\s+this\s+(?:paper|work),?\s+)", "", best)
    return _closed(f"{RELATION_OPENINGS[relation]}, {best[0].lower()}{best[1:]}")


def assemble(out, allowed: frozenset[str], title: str, paper_text: str, works: str, threshold: float,
             counts: Counter, earlier: Sequence[str] = ()) -> tuple[str, str]:
    """The paragraph of a themed answer ``out`` and its closing sentence (module docstring); what was dropped or
    replaced is added to ``counts``. Raises ValueError (the client re-asks once) when no sentence on a work is left."""
    body = []
    for key, text in out.works.model_dump().items():
        for sent in sentences(_bracketed(text, allowed)):
            if set(find_citation_keys(sent)) - allowed or is_meta(sent):
                counts["dropped"] += 1
            else:
                body.append(_cited(as_work(sent) if refers_to_paper(sent, title) else sent, [key]))
    if not body:
        raise ValueError(f"no sentence left: write about the works {sorted(allowed)} only, one or two sentences "
                         f"each, and nothing about the writing or the paper itself")
    topic = _closed(strip_markers(out.topic))
    theme = " ".join(out.theme.split()).strip(" .")
    if (len(topic.split()) < TOPIC_WORDS or lacks_main_verb(topic) or repeats_sentence(topic, theme, 0.8)
            or support(topic, title) >= 0.5):  # no sentence, the theme's name again, or the paper's title
        topic = f"Several works address {theme[0].lower()}{theme[1:]}." if theme else ""  # the theme as a sentence
        counts["topics_replaced"] += 1
    opening = [] if not topic or is_meta(topic) or refers_to_paper(topic, title) else [topic]
    counts["dropped"] += 1 - len(opening)
    comparison = []
    if hasattr(out, "comparison"):
        text = _bracketed(out.comparison, allowed)
        named = [k for k in dict.fromkeys([*find_citation_keys(text), *out.comparison_keys]) if k in allowed]
        if len(named) >= 2 and not is_meta(text) and not refers_to_paper(text, title):
            comparison = [_cited(text, named)]
        else:
            counts["comparisons_dropped"] += 1
    position = _closed(_bracketed(out.position, allowed))
    if set(find_citation_keys(position)) - allowed:
        position = _closed(re.sub(r"\s*\[[^\[\]]*\]", "", position))
    if not (refers_to_paper(position, title) and relates_works(position) and not is_meta(position)
            and supported_relation(position, f"{title}. {paper_text}", works, threshold, (1 + threshold) / 2)
            and not _repeats(position, [*earlier, *body])):
        position = fallback_position(out.relation, paper_text, works, earlier) or ""
        counts["positions_replaced"] += 1
    return " ".join([*opening, *body, *comparison, *([position] if position else [])]), position


def themed_schema(allowed: frozenset[str], title: str, paper_text: str, works_text: Mapping[str, str],
                  threshold: float, earlier: Sequence[str] = ()) -> type[pydantic.BaseModel]:
    """The answer of a themed Compose on the works ``allowed`` (keys); ``title``/``paper_text``: the paper's own
    text (title; abstract and introduction); ``works_text``: key → the notes and abstract of each work;
    ``threshold``: the support a closing sentence needs; ``earlier``: the draft's closing sentences so far (one that
    repeats an earlier one is replaced, as the final checks would remove it). Its ``text`` property is the
    paragraph, ``position_sentence`` its closing; the class counts what its validator changed in the last answer
    (``dropped``, ``comparisons_dropped``, ``positions_replaced``)."""
    keys = tuple(sorted(allowed, key=lambda k: (len(k), k)))
    several = len(keys) > 1
    all_works = " ".join(works_text.get(k, "") for k in keys)

    Works = pydantic.create_model("Works", **{k: (str, pydantic.Field(min_length=10)) for k in keys})

    class ThemedOut(pydantic.BaseModel):
        theme: str = pydantic.Field(min_length=3)
        topic: str = pydantic.Field(min_length=10)
        works: Works  # type: ignore[valid-type]
        if several:
            comparison: str = pydantic.Field(min_length=10)
            comparison_keys: list[Literal[keys]] = pydantic.Field(min_length=2)  # type: ignore[valid-type]
        relation: Literal[RELATIONS]  # type: ignore[valid-type]
        position: str = pydantic.Field(min_length=10)
        confidence: float = pydantic.Field(0.5, ge=0.0, le=1.0)
        max_chars: ClassVar[dict[str, int]] = {"theme": THEME_CHARS, "topic": SENTENCE_CHARS,
                                               "comparison": SENTENCE_CHARS, "position": SENTENCE_CHARS,
                                               **{k: SENTENCE_CHARS for k in keys}}
        dropped: ClassVar[int] = 0
        comparisons_dropped: ClassVar[int] = 0
        positions_replaced: ClassVar[int] = 0
        topics_replaced: ClassVar[int] = 0
        resolves: ClassVar[list[int]] = []
        _text: str = pydantic.PrivateAttr("")
        _position: str = pydantic.PrivateAttr("")

        @property
        def text(self) -> str:
            return self._text

        @property
        def position_sentence(self) -> str:
            return self._position

        @pydantic.model_validator(mode="after")
        def _assemble(self) -> ThemedOut:
            counts = Counter()
            self._text, self._position = assemble(self, allowed, title, paper_text, all_works, threshold, counts,
                                                  earlier)
            for name in ("dropped", "comparisons_dropped", "positions_replaced", "topics_replaced"):
                setattr(type(self), name, counts[name])
            return self

    ThemedOut.__name__ = "ComposeOut"
    return ThemedOut
