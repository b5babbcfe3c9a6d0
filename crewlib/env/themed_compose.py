"""Compose a paragraph as one theme that relates to the paper (``executor.compose_form: themed``; docs/method.md,
"A paragraph that relates").

The answer's JSON schema holds the paragraph's parts, so that its structure is guaranteed, not hoped for:

- ``theme`` — the name the composer gives the theme (2 to 6 words, recorded in the trace);
- ``topic`` — the opening sentence naming the theme (citations removed: it introduces, it claims nothing); one
  that is no opening sentence (shorter than six words, no main verb, lower-case or a question's words, the theme's
  name or the paper's title again) becomes "Several works address <theme>." (``topics_replaced``);
- ``works`` — one field per work of the theme, named by its key and required: one or two sentences on that work,
  each cited with its key, so that every work gets its sentences and every sentence cites its work;
- ``comparison`` and ``comparison_keys`` — where the theme has two works or more, one sentence comparing or
  grouping them, cited with each work it names (two at least) and supported by their notes — a sentence saying
  they share something by each work's notes alone (:func:`grounded_comparison`); one that fails is replaced by the
  first sentences on two works set side by side ("X does Y [R1], whereas Z does W [R2].", ``comparisons_replaced``);
- ``relation`` (builds_on | differs | addresses_gap) and ``position`` — the closing sentence on how the paper
  stands to these works. It must speak of the paper ("This paper ...") and say only what the paper's own
  title, abstract or introduction says (:func:`crewlib.positioning.supported_relation`, the support
  threshold of cited sentences) and repeat neither an earlier closing nor a sentence on a work; else it is
  replaced by :func:`fallback_position`, built from the sentence of the paper's own text closest to the works
  (``positions_replaced``): the small local model's closings are rarely true of the paper, and an abstract written
  in the third person ("The authors extend ...") has few sentences that say "we".
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Literal

import pydantic

from crewlib.citations import KEY, find_citation_keys
from crewlib.env.closing import closed, fallback_position, lower_first, repeats
from crewlib.positioning import (
    claim_stems,
    copies_cited_voice,
    refers_to_paper,
    relates_works,
    relation_support,
    supported_relation,
)
from crewlib.sections import THEME_OPENING, as_work, describes_paper, is_meta, repeats_sentence
from crewlib.sentence_form import lacks_main_verb, run_on
from crewlib.text import (
    STOPWORDS,
    containment,
    content_words,
    sentence_case,
    sentences,
    stems,
    strip_markers,
    support,
    tokens,
)

RELATIONS = ("builds_on", "differs", "addresses_gap")
# A comparison that says the works share something: it must be true of each of them.
_GROUPING = re.compile(r"\b(?:both|all|each|share[sd]?|sharing|common|commonly|same|similar(?:ly)?|likewise|"
                       r"together|alike)\b", re.IGNORECASE)
# Where a comparison's clauses part: "Both X ..., but [R5] ...", "... ; ...".
_CLAUSES = re.compile(r",?\s+(?:but|while|whereas|although|though|yet)\s+|;\s*", re.IGNORECASE)
# An opening on one work, not a theme ("The authors introduce ...", "This method ...").
_ONE_WORK = re.compile(r"^(?:the|this|these|its|their)\s+(?:authors?|work|paper|method|model|approach|study)\b",
                       re.IGNORECASE)
# a sentence opening on a back-reference ("Their results reveal ...", "This error rate can be ..."): no first sentence
_BACK_OPENING = re.compile(r"^(?:it|its|they|them|their|these|those|such|that|here|the\s+(?:latter|former))\b"
                           r"|^this\s+(?!(?:paper|work|study|method|model|approach|framework|system)\b)\w"
                           r"|^to\s+(?:\w+\s+)?(?:this|these|that|it)\b",  # "To make this possible, ...", "To this end"
                           re.IGNORECASE)
_PROMPT_THEME = re.compile(r"\btheme\b|\bthe\s+works\s+share\b|\b\d+\s+to\s+\d+\s+words\b", re.IGNORECASE)
# A topic that is no opening sentence: a question's or a heading's words ("how to apply ...").
_NO_TOPIC = re.compile(r"^(?:how|what|why|whether|which|when|where|towards?|on|using)\b", re.IGNORECASE)
THEME_CHARS, SENTENCE_CHARS = 60, 320
# What a themed answer's validator changed, counted on its schema class (and summed in the executor's theme report).
COUNTS = ("dropped", "comparisons_dropped", "comparisons_replaced", "positions_replaced", "topics_replaced", "cut",
          "work_sentences_removed", "work_sentences_from_notes", "works_left_out", "topics_renamed")
TOPIC_WORDS = 6
COPIED_SHARE = 0.8  # share of a comparison's claim stems one work's text holds: its sentence, if another lacks it
PAPER_STEMS = 2  # a comparison's stems the works lack and the paper's text holds: it compares the paper
TOPIC_REPEAT = 0.6  # share of an opening's content words one sentence on a work holds: it opens on that work
# the output checks on one sentence (and the sentences it must not repeat beside the draft's): as they leave it, or
# None where they remove it (crewlib.sections.sentence_gate)
Keep = Callable[..., "str | None"]
NOTE_WORDS = 6  # the words a work's sentence from its notes has at least

# Words every scholarly text shares: no theme's name.
GENERIC_WORDS = frozenset({
    "model", "models", "method", "methods", "approach", "approaches", "paper", "work", "works", "task", "tasks",
    "results", "result", "using", "used", "based", "show", "shows", "propose", "proposed", "proposes", "new", "novel",
    "performance", "authors", "state", "art", "well", "several", "large", "different", "first", "each", "more",
    "most", "other", "both", "such", "have", "has", "into", "from", "over", "than", "that", "this", "which", "while",
    "when", "where", "also", "only", "across", "through", "without", "within", "improves", "improve", "improved",
    "achieves", "introduce", "introduces", "present", "presents", "study", "studies", "existing", "wide", "range",
})  # a topic sentence shorter than this is a theme's name, not a sentence


def _bracketed(text: str, allowed: frozenset[str]) -> str:
    """Keys the model wrote bare ("ROUGE and R6 both ...") as citations ("ROUGE and [R6] both ..."), outside the
    citations it wrote."""
    parts = re.split(r"(\[[^\[\]]*\])", text)
    bare = re.compile(rf"\b({KEY})\b")
    return "".join(part if part.startswith("[") else bare.sub(lambda m: f"[{m.group(1)}]" if m.group(1) in allowed
                                                               else m.group(1), part) for part in parts)


def _cited(text: str, keys: list[str]) -> str:
    """``text`` citing each of ``keys``: the markers it holds stay where they are ("Unlike [R2], [R5] ..."), the
    keys it does not cite yet go before its stop."""
    text = closed(text)
    missing = [k for k in keys if k not in find_citation_keys(text)]
    return f"{text[:-1].rstrip()} [{', '.join(missing)}]{text[-1]}" if missing else text


def claim_support(sentence: str, text: str) -> float:
    """The share of the sentence's claim stems (its content less the words of relation) that ``text`` holds
    (:func:`crewlib.positioning.relation_support`'s own share, ``text`` in the paper's place)."""
    return relation_support(sentence, text)[1]


def grounded_comparison(sentence: str, named: Sequence[str], works_text: Mapping[str, str], threshold: float,
                        paper_text: str = "") -> bool:
    """A comparison the notes of the works it names support: its claim stems found in their texts together
    (≥ ``threshold``); a clause that says the works share something ("both", "all", "share", "similar" ...) must
    find each of its claim stems in each work's text — "Both [R2] and [R5] use Transformer pretraining to train a
    Transformer encoder" of BERT and the decoder-only GPT-1 finds three of four in GPT-1's, all but "encoder"; a
    sentence one work's text holds (:data:`COPIED_SHARE`) and another's does not is that work's
    sentence with a key added ("The largest model reaches state-of-the-art perplexity ... [R1, R7]"). A sentence
    whose words the works lack but the paper's text (``paper_text``) holds, two stems or more, compares the paper,
    not the works ("The authors' approach differs from BERT by predicting several future tokens ... [R2, R6]" of
    ProphetNet's own objective)."""
    together = " ".join(works_text.get(k, "") for k in named)
    if claim_support(sentence, together) < threshold:
        return False
    if paper_text and len((claim_stems(sentence) - stems(together)) & stems(paper_text)) >= PAPER_STEMS:
        return False
    for clause in _CLAUSES.split(strip_markers(sentence)):
        if _GROUPING.search(clause) and not all(claim_support(clause, works_text.get(k, "")) == 1.0 for k in named):
            return False
    if not _GROUPING.search(strip_markers(sentence)):  # one work's sentence with another key added is no comparison
        shares = [claim_support(sentence, works_text.get(k, "")) for k in named]
        if max(shares) >= COPIED_SHARE and min(shares) < threshold:
            return False
    return True


def juxtaposed(first: str, second: str) -> str:
    """Two works' sentences set side by side as one: "X does Y [R1], whereas Z does W [R2]"."""
    return f"{first.rstrip()[:-1].rstrip()}, whereas {lower_first(second)}"


@dataclasses.dataclass(frozen=True)
class Parts:
    """A themed paragraph's parts, in their order: the opening (topic) sentence, the sentences on the works (a
    comparison among them), and the closing sentence on the paper."""

    opening: tuple[str, ...]
    body: tuple[str, ...]
    position: str

    @property
    def text(self) -> str:
        return " ".join([*self.opening, *self.body, *([self.position] if self.position else [])])


def _theme_name(theme: str, works_text: Mapping[str, str], titles: Mapping[str, str]) -> str:
    """The theme's name (its ordinary capitalised words lower-cased: "Policy Gradient Methods" → "policy gradient
    methods", "PPO" stays) when the works' texts hold all its content stems; else the term two of the works' titles
    or more share ("language understanding", then one word: "summarization"), or two of their texts (two words),
    or the name as it was when none is shared. A name in the prompt's words ("the theme the works share, in 2 to 6
    words": `crew write --tex`) is no name."""
    theme = "" if _PROMPT_THEME.search(theme) else " ".join(lower_first(w) for w in theme.split())
    if theme and stems(theme) <= stems(" ".join(works_text.values())):
        return theme
    texts = list(works_text.values())
    named = list(titles.values())
    return _shared_term(named, 2) or _shared_term(named, 1) or _shared_term(texts, 2) or theme


def _shared_term(texts: list[str], length: int) -> str:
    """The term of ``length`` words (compared by stem: "summaries" and "summarization" are one) that the most of
    ``texts`` hold, two at least, its first word not a generic one, in its most frequent form (ties: the longer):
    "policy gradient", "summarization"; "" if none."""
    forms: dict[tuple, Counter] = {}
    holders: Counter = Counter()
    for text in texts:
        words = [w for w in tokens(strip_markers(text)) if w not in STOPWORDS]
        terms = [tuple(words[i:i + length]) for i in range(len(words) - length + 1)]
        terms = [t for t in terms if all(len(w) > 3 for w in t) and t[0] not in GENERIC_WORDS
                 and t[-1] not in GENERIC_WORDS - {"model", "models", "method", "methods"}]
        for key in {tuple(w[:5] for w in t) for t in terms}:
            holders[key] += 1
        for t in terms:
            forms.setdefault(tuple(w[:5] for w in t), Counter())[" ".join(t)] += 1
    ranked = sorted((k for k, n in holders.items() if n >= 2), key=lambda k: (-holders[k], -sum(forms[k].values()), k))
    if not ranked:
        return ""
    term = max(forms[ranked[0]], key=lambda w: (forms[ranked[0]][w], len(w)))
    written = re.search(r"[\s-]+".join(map(re.escape, term.split())), " ".join(texts), re.IGNORECASE)
    return written.group(0).lower() if written else term  # as the texts write it: "multi-agent"


def _kept_on(sentence: str, key: str, keep: Keep, first: bool) -> str | None:
    """The sentence on work ``key`` as the output checks leave it; None where they remove it or cite another work
    for it, or where, as its work's first sentence, it opens on a back-reference."""
    if first and _BACK_OPENING.match(strip_markers(sentence).strip()):
        return None
    kept = keep(sentence)
    return kept if kept is not None and set(find_citation_keys(kept)) == {key} else None


def _kept_whole(sentence: str, keep: Keep, also: Sequence[str]) -> bool:
    """The output checks keep the sentence as it is, citations and all, and it repeats none of ``also``."""
    kept = keep(sentence, also)
    return kept is not None and set(find_citation_keys(kept)) == set(find_citation_keys(sentence))


def note_sentence(key: str, text: str, keep: Keep) -> str | None:
    """The first sentence of a work's notes, then its abstract (``text``), that the output checks keep as a sentence
    on it: a statement of :data:`NOTE_WORDS` words or more in the third person, cited, not fragments run together
    (the 0.5B's notes on BERT in notebook 03); None where there is none."""
    for sent in sentences(" ".join(strip_markers(text).split())):
        if (len(sent.split()) >= NOTE_WORDS and sent.endswith(".") and not is_meta(sent) and not run_on(sent)
                and (kept := _kept_on(_cited(as_work(sent), [key]), key, keep, first=True)) is not None):
            return kept
    return None


def _opening(topic: str, names: Sequence[str], keep: Keep | None, earlier: Sequence[str], counts: Counter) -> str:
    """The opening sentence the output checks keep and no earlier sentence of the draft repeats: ``topic``, else
    "Several works address <name>." of the next of ``names`` (the shared terms of the works' titles and texts:
    two paragraphs named alike, the second opening would go as a repeat; ``topics_renamed``); "" when none is."""
    def fits(sentence: str) -> bool:
        return bool(sentence) and (keep(sentence) == sentence if keep else not repeats(sentence, earlier))
    if fits(topic):
        return topic
    for name in names:
        if fits(candidate := f"{THEME_OPENING} {name}."):
            counts["topics_renamed"] += 1
            return candidate
    return ""


def _topic(out, title: str, counts: Counter, body: Sequence[str] = (), works_text: Mapping[str, str] | None = None,
           paper_text: str = "", titles: Mapping[str, str] | None = None, keep: Keep | None = None,
           earlier: Sequence[str] = ()) -> list[str]:
    """The opening sentence: the answer's topic, or the theme as a sentence when the topic is no opening sentence
    (shorter than :data:`TOPIC_WORDS`, no main verb, lower-case or a question's words, the theme's name again,
    the paper's title, one work's sentence of ``body`` again or a sentence on one work — "The authors introduce ..."
    — or the paper's abstract restated: it would open on one work, or on the paper, not the theme). The theme's
    name is held to the works' texts (``works_text``, ``titles``; :func:`_theme_name`)."""
    topic = closed(strip_markers(out.topic))
    theme = " ".join(out.theme.split()).strip(" .")
    if works_text:
        theme = _theme_name(theme, works_text, titles or {})
    if (len(topic.split()) < TOPIC_WORDS or lacks_main_verb(topic) or not topic[0].isupper()
            or _NO_TOPIC.match(topic) or repeats_sentence(topic, theme, 0.8) or support(topic, title) >= 0.5
            or any(containment(topic, strip_markers(s)) >= TOPIC_REPEAT for s in body)
            or _ONE_WORK.match(topic) or (paper_text and describes_paper(topic, paper_text))):
        # the theme as a sentence — of several works: a paragraph on one work opens on it (demo target 2: "Several
        # works address transformer-XL." of one work, given its key by the output checks and then unsupported)
        several = works_text is None or len(works_text) > 1
        topic = f"{THEME_OPENING} {theme[0].lower()}{theme[1:]}." if theme and several else ""
        counts["topics_replaced"] += 1
    if topic and (keep is not None or earlier) and works_text and len(works_text) > 1:
        named, texts = list((titles or {}).values()), list(works_text.values())
        # last, one word of their texts: paper 37's theme, in its title's words, was a description of the paper
        names = [n for n in (_shared_term(named, 2), _shared_term(named, 1), _shared_term(texts, 2),
                             _shared_term(texts, 1)) if n]  # and its works' titles shared no term
        topic = _opening(topic, names, keep, earlier, counts)
    opening = [] if not topic or is_meta(topic) or refers_to_paper(topic, title) else [topic]
    counts["dropped"] += 1 - len(opening)
    return opening


def _restates_title(sentence: str, work_title: str) -> bool:
    """The sentence says no more than its work's title (its content words all in the title)."""
    words = content_words(strip_markers(sentence))
    return bool(work_title) and bool(words) and words <= content_words(work_title)


def _comparison(out, body: list[tuple[str, str]], allowed: frozenset[str], title: str, paper_text: str,
                works_text: Mapping[str, str], threshold: float, counts: Counter,
                titles: Mapping[str, str] | None = None, keep: Keep | None = None) -> list[tuple[str, str]]:
    """The body with its comparison: the answer's, where it names two works or more and their notes support it
    (:func:`grounded_comparison`) and the output checks keep it with its citations, repeating no sentence on the
    works (paper 77 of the recent papers: "LPNet uses …, while SeqPAN proposes … [R1, R2, R4]" repeated SeqPAN's
    sentence and was removed at the end), after the sentences on the works; else the first sentences on two works
    set side by side (:func:`juxtaposed`) in place of the two (``comparisons_replaced``), or none
    (``comparisons_dropped``)."""
    if not hasattr(out, "comparison"):
        return body
    text = sentence_case(_bracketed(out.comparison, allowed))
    named = [k for k in dict.fromkeys([*find_citation_keys(text), *out.comparison_keys]) if k in allowed]
    if (len(named) >= 2 and not is_meta(text) and not refers_to_paper(text, title) and not run_on(text)
            and grounded_comparison(text, named, works_text, threshold, paper_text)
            and (keep is None or _kept_whole(_cited(text, named), keep, [s for _, s in body]))):
        return [*body, ("*", _cited(text, named))]
    # each work's first sentence that its own text supports (the 1.5B put GPT-1's result in XLNet's field: joined,
    # the output checks removed both works' citations with it)
    # (and a statement: a work's title — "Is Independent Learning All You Need ...? [R8]", "DNNs Can Be Trained in
    # Tiny Subspaces [R5]." of a work known by its title only, on real papers — is none)
    supported = [i for i, (key, sent) in enumerate(body) if strip_markers(sent).endswith(".")
                 and support(strip_markers(sent), works_text.get(key, "")) >= threshold
                 and not lacks_main_verb(sent) and not _restates_title(sent, (titles or {}).get(key, ""))
                 and not _BACK_OPENING.match(strip_markers(sent).strip())]
    firsts = sorted({body[i][0]: i for i in reversed(supported)}.values())[:2]
    if len(firsts) < 2:
        counts["comparisons_dropped"] += 1
        return body
    counts["comparisons_replaced"] += 1
    (i, (ka, a)), (j, (kb, b)) = [(i, body[i]) for i in sorted(firsts)]
    both = (f"{ka} {kb}", juxtaposed(a, b))
    return [both if n == i else item for n, item in enumerate(body) if n != j]


def assemble(out, allowed: frozenset[str], title: str, paper_text: str, works_text: Mapping[str, str],
             threshold: float, counts: Counter, earlier: Sequence[str] = (),
             titles: Mapping[str, str] | None = None, keep: Keep | None = None) -> Parts:
    """The paragraph of a themed answer ``out`` in its parts (module docstring); ``works_text``: key → the notes
    and abstract of each work; ``titles``: key → its title; ``keep``: the output checks on one sentence
    (:func:`crewlib.sections.sentence_gate`) — a sentence on a work they would remove, one that opens on a
    back-reference ("Their results reveal ...") as its work's first, or fragments run together
    (:func:`crewlib.sentence_form.run_on`), is left out (``work_sentences_removed``), and
    a work left with none gets the first sentence of its notes that they keep (``work_sentences_from_notes``; none:
    ``works_left_out``). What was dropped or replaced is added to ``counts``.
    Raises ValueError (the client re-asks once) when no sentence on a work is left."""
    body = []
    works_written = out.works.model_dump() if isinstance(out.works, pydantic.BaseModel) else dict(out.works)
    for key, text in works_written.items():
        parts = sentences(sentence_case(_bracketed(text, allowed)))
        if len(text.strip()) >= SENTENCE_CHARS - 1 and parts and not parts[-1].rstrip().endswith((".", "!", "?")):
            parts, counts["cut"] = parts[:-1], counts["cut"] + 1  # cut at the field's cap: "... of their met"
        own = []
        for sent in parts:
            if set(find_citation_keys(sent)) - allowed or is_meta(sent):
                counts["dropped"] += 1
                continue
            sent = _cited(as_work(sent) if refers_to_paper(sent, title) else sent, [key])
            if run_on(sent) or (keep is not None and (sent := _kept_on(sent, key, keep, first=not own)) is None):
                counts["work_sentences_removed"] += 1
                continue
            own.append(sent)
        if not own and keep is not None:
            own = [s for s in [note_sentence(key, works_text.get(key, ""), keep)] if s]
            counts["work_sentences_from_notes" if own else "works_left_out"] += 1
        body += [(key, s) for s in own]
    if not body:
        raise ValueError(f"no sentence left: write about the works {sorted(allowed)} only, one or two sentences "
                         f"each, and nothing about the writing or the paper itself")
    written = {k: works_text[k] for k in dict.fromkeys(k for k, _ in body) if k in works_text}  # one work left: no
    opening = _topic(out, title, counts, [s for _, s in body], written or works_text, paper_text,  # "Several works"
                     titles, keep, earlier)
    body = _comparison(out, body, allowed, title, paper_text, works_text, threshold, counts, titles, keep)
    works, voices = " ".join(works_text.get(k, "") for k in sorted(allowed)), [works_text.get(k, "") for k in allowed]
    sentences_so_far = [s for _, s in body]
    position = closed((sentences(sentence_case(_bracketed(out.position, allowed))) or [""])[0])
    if set(find_citation_keys(position)) - allowed:
        position = closed(re.sub(r"\s*\[[^\[\]]*\]", "", position))
    if not (refers_to_paper(position, title) and relates_works(position) and not is_meta(position)
            and supported_relation(position, f"{title}. {paper_text}", works, threshold, (1 + threshold) / 2)
            and not copies_cited_voice(position, voices)
            and not repeats(position, [*earlier, *sentences_so_far])):
        position = fallback_position(out.relation, paper_text, works, earlier, voices) or ""
        counts["positions_replaced"] += 1
    return Parts(tuple(opening), tuple(sentences_so_far), position)


def themed_schema(allowed: frozenset[str], title: str, paper_text: str, works_text: Mapping[str, str],
                  threshold: float, earlier: Sequence[str] = (),
                  titles: Mapping[str, str] | None = None, keep: Keep | None = None) -> type[pydantic.BaseModel]:
    """The answer of a themed Compose on the works ``allowed`` (keys); ``title``/``paper_text``: the paper's own
    text (title; abstract and introduction); ``works_text``: key → the notes and abstract of each work;
    ``threshold``: the support a closing sentence needs; ``earlier``: the draft's sentences so far (a closing or an
    opening that repeats one is replaced, as the final checks would remove it); ``keep``: the output checks on one
    sentence (:func:`assemble`). Its ``text`` property is the paragraph, ``position_sentence`` its closing; the
    class counts what its validator changed in the last answer (:data:`COUNTS`)."""
    keys = tuple(sorted(allowed, key=lambda k: (len(k), k)))
    several = len(keys) > 1

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
        resolves: ClassVar[list[int]] = []  # and, set by the validator, each of COUNTS
        _parts: Parts | None = pydantic.PrivateAttr(None)

        @property
        def parts(self) -> Parts:
            return self._parts

        @property
        def text(self) -> str:
            return self._parts.text

        @property
        def position_sentence(self) -> str:
            return self._parts.position

        def reclose(self, position: str) -> None:  # a teammate's paragraph of the same round took its closing
            self._parts = dataclasses.replace(self._parts, position=position)

        @pydantic.model_validator(mode="after")
        def _assemble(self) -> ThemedOut:
            counts = Counter()
            self._parts = assemble(self, allowed, title, paper_text, works_text, threshold, counts, earlier, titles,
                                   keep)
            for name in COUNTS:
                setattr(type(self), name, counts[name])
            return self

    ThemedOut.__name__ = "ComposeOut"
    return ThemedOut


@dataclasses.dataclass
class NotesAnswer:
    """A themed answer with nothing written (:func:`assemble` then takes every part from the notes and the paper's
    text): the paragraph of :func:`notes_paragraph`."""

    theme: str
    works: dict[str, str]
    relation: str = "builds_on"
    topic: str = ""
    comparison: str = ""
    comparison_keys: tuple[str, ...] = ()
    position: str = ""


def notes_paragraph(keys: Sequence[str], title: str, paper_text: str, works_text: Mapping[str, str], threshold: float,
                    counts: Counter, earlier: Sequence[str], titles: Mapping[str, str], keep: Keep) -> str:
    """A paragraph on the works ``keys`` built from their notes alone, no LLM call: "Several works address <the
    term their titles share>." (else their notes and abstracts: demo target 0's PPO and GAE share "policy
    gradient"), each work's first sentence the output checks keep, two of them set side by side, and the paper's
    sentence closest to them as its closing (:func:`assemble` with :class:`NotesAnswer`); "" when no work has a
    sentence."""
    named = next((term for texts, length in ((titles, 2), (titles, 1), (works_text, 2), (works_text, 1))
                  if (term := _shared_term([texts[k] for k in keys], length))), "")
    try:
        return assemble(NotesAnswer(named, dict.fromkeys(keys, "")), frozenset(keys), title,
                        paper_text, {k: works_text[k] for k in keys}, threshold, counts, earlier, titles, keep).text
    except ValueError:
        return ""


def revised_paragraph(old: str, new: str, flagged: str, title: str, counts: Counter) -> str:
    """A revision ``new`` of the themed paragraph ``old``, keeping the structure its Compose validated: its closing
    sentence (the revision's own sentences on the paper are not kept — a revision sees no paper text: one that
    cites a work is about that work, "This paper builds on BERT [R2], which ..." → "The work builds on ...", one
    that cites none, or the old closing copied back, is dropped — and the old closing ends the paragraph again,
    ``closings_kept``); its opening sentence and its comparison, where the revision lost them and the open
    feedback on the paragraph (``flagged``) does not quote them (``openings_kept``, ``comparisons_kept``). Its
    sentences start upper-case again (the 1.5B's revisions lower-case them and the sentences run together), and
    an uncited sentence that is not the opening is dropped (``revision_uncited_dropped``: "At inference time the
    extra streams." was left of a closing). What it did is added to ``counts``."""
    old = sentences(old)
    free = [s for s in old if s[:60] not in flagged]
    closing = [s for s in old if refers_to_paper(s, title)][-1:]
    opening = [s for s in free[:1] if s == old[0] and not find_citation_keys(s) and not refers_to_paper(s, title)]
    comparison = [s for s in free if len(set(find_citation_keys(s))) >= 2 and not refers_to_paper(s, title)]
    kept = []
    for s in sentences(sentence_case(new)):
        if refers_to_paper(s, title):  # the old closing copied back is the old closing
            if find_citation_keys(s) and not any(repeats_sentence(strip_markers(s), c, 0.6) for c in closing):
                kept.append(as_work(s))
        elif find_citation_keys(s) or s in opening:
            kept.append(s)
        else:  # a themed paragraph's only uncited sentence is its opening: the 1.5B's others are pieces
            counts["revision_uncited_dropped"] += 1
    if opening and (not kept or find_citation_keys(kept[0])):
        kept.insert(0, opening[0])
        counts["openings_kept"] += 1
    if comparison and not any(len(set(find_citation_keys(s))) >= 2 for s in kept):
        kept.append(comparison[0])
        counts["comparisons_kept"] += 1
    counts["closings_kept"] += bool(closing)
    return " ".join(kept + closing)


def extended_paragraph(old: str, body: str, position: str, title: str) -> str:
    """The theme's paragraph ``old`` with the sentences on its new works (``body``, their comparison included): its
    sentences, the new ones, then its closing — or, where it had none, the new answer's ``position``."""
    old = sentences(old)
    closing = [s for s in old if refers_to_paper(s, title)][-1:]
    rest = [s for s in old if s not in closing]
    return " ".join([*rest, body, *(closing or [position])]).strip()


def merge_theme_paragraphs(blocks: list[str], themes: list[tuple[str, ...]], title: str) -> tuple[list[str], int]:
    """The paragraphs with those on one theme (all their citations keys of ``themes[i]``) joined into the first of
    them: its opening, every paragraph's sentences in order without their openings and closings, then its closing
    (or, where it has none, the next one's); and how many paragraphs were joined into another."""
    out: list[list[str]] = []
    home: dict[int, int] = {}  # theme → its paragraph's index in ``out``
    merged = 0
    for block in blocks:
        cited = set(find_citation_keys(block))
        theme = next((i for i, keys in enumerate(themes) if cited and cited <= set(keys)), None)
        if theme is None or theme not in home:
            if theme is not None:
                home[theme] = len(out)
            out.append(sentences(block))
            continue
        first = out[home[theme]]
        closing = [s for s in first[-1:] if refers_to_paper(s, title)]
        parts = sentences(block)
        own_closing = [s for s in parts[-1:] if refers_to_paper(s, title)]
        body = [s for s in parts if s not in own_closing and (find_citation_keys(s) or s is not parts[0])]
        first[len(first) - len(closing):] = [*body, *(closing or own_closing)]
        merged += 1
    return [" ".join(p) for p in out], merged
