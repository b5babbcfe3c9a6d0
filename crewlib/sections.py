"""The output checks every system's related-work section passes, and the repairs they make.

One function, :func:`finish_section`, serves CREW and every baseline, so that "CREW beats long
context" compares texts held to the same rules (docs/method.md, "Output checks"). Every repair is
counted in a :class:`SectionReport` (``Generation.notes["output_checks"]``); nothing is changed
silently, and nothing a check finds is left in the section.

Always applied:

- **repeated paragraphs** — a paragraph whose content words overlap an earlier one by at least
  ``duplicate_threshold`` (overlap coefficient) is removed;
- **duplicated markers** — ``[R2] [R2]`` and ``[R2, R2]`` become ``[R2]``;
- **meta-text** — a sentence about the draft, the workspace, notes or feedback, or a preamble
  ("Here is a related-work section ...") is removed;
- **stray punctuation** — repeated full stops (``[R2]. . The``) and "sentences" with no word;
- **truncation** — the section's last sentence cut by the token limit (no closing punctuation) is
  removed (unless it is the whole text, which is kept; counted either way).

The sentence guarantees, each named in ``output.repairs`` (all on by default; an empty list gives the
section as the checks above leave it, the setting the notebooks' shipped answers were recorded with):

- ``title_only`` — an internal note ("Title (known by its title only) [R4].") is removed, and a sentence
  that cites only works known by their title must be supported by those titles;
- ``uncited`` — a sentence that cites nothing and makes a claim about specific work (it names "the
  authors", a method, a system, a number ...) gets the key of the work whose text and notes hold its
  content (support ≥ ``support_threshold``), else it is removed; a topic or transition sentence stays,
  given a key only when it copies one work (support ≥ 0.8);
- ``first_person`` — a cited author's "we/our/us" outside a quotation becomes "the authors/their/them";
  an uncited first-person sentence (the target's own voice) is removed;
- ``target`` — a sentence that restates the target's abstract (the target presented as related work),
  or speaks of "the target paper" / "this paper's problem" (the prompts' words), is removed;
- ``unsupported`` — a cited sentence must be supported by the text and notes of the works it cites
  (lexical :func:`~crewlib.text.support` ≥ ``support_threshold``); if another pool work supports it,
  the citation moves there (one paper's method credited to another), else the sentence is removed; a
  sentence citing several works is removed when one of them supports it less than half that (a claim
  that "[R3] and [R6] both ..." where [R6] has no part in it);
- ``repeated_sentences`` — a sentence that near-duplicates an earlier one anywhere in the section
  (overlap ≥ ``sentence_threshold``) is removed;
- ``markers`` — a run of adjacent citations naming a key twice becomes one (``[R7] [R5] [R7]`` → ``[R7, R5]``);
- ``truncated`` — a cut last sentence is removed from every paragraph, not only the section's last (each
  paragraph of a CREW draft is one answer, each of which can be cut);
- ``dangling`` — a sentence that, its citations left out, ends on a word that needs an object ("The model
  performs well on [R3].": the citation stands where its dataset should be) is removed; the phrases that take a
  work as their object ("based on", "proposed by", "introduced in", "such as", "see" ...) stay;
- ``prompt_echo`` — a sentence that opens with a header of the prompts ("The section so far, one line per
  paragraph (the works it cites): AutoGen is ...", "This section does not cite yet, with notes: QAGS measures
  ...", the 0.5B's answers) keeps what follows the header's colon; one that holds such words elsewhere is removed;
- ``slips`` — a cited sentence that copies a sentence of its work nearly verbatim but with a word broken off
  ("hierarchical attention over words andsent", "lower layers cap": :func:`~crewlib.text.slipped_copy`) gets
  that sentence's words back, with its citation;
- ``positioning`` — a sentence on the target paper itself that relates it to the works ("Unlike these works, this
  paper ...", :mod:`crewlib.positioning`) stays when the paper's own text supports it (else removed, counted),
  and closes its paragraph (one a paragraph); the paper's abstract restated, a cited author's copied "we" and the
  prompts' words are handled as without it; a paragraph that never relates to the paper is counted (found);
- ``form`` — a sentence broken at its citation, one without a main verb, an author–year citation copied out of
  an abstract beside a key, a pool title pasted as an opening (:mod:`crewlib.sentence_form`).

A paragraph left with no citation at all (only topic sentences) is removed too, counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import ClassVar

from crewlib.citations import KEY_GROUP, dedupe_markers, find_citation_keys, merge_marker_runs  # noqa: F401
from crewlib.positioning import copies_cited_voice, refers_to_paper, relates_works, supported_relation
from crewlib.schema import REPAIRS, Params
from crewlib.sentence_form import repair_form
from crewlib.tasks import Task, title_only
from crewlib.text import containment, content_words, sentences, slipped_copy, strip_markers, support

_META = re.compile(
    r"\b(?:the\s+(?:current\s+|existing\s+|above\s+)?drafts?|workspace|segments?\s*(?:id|\d)|segment_id|"
    r"(?:shared|team'?s?)\s+(?:knowledge|notes)|the\s+notes|open\s+feedback|the\s+feedback|"
    r"(?:here\s+is|below\s+is)\s+(?:a|the|an)\b|sample\s+related[- ]work|as\s+an\s+ai\b|"
    r"paragraphs?\s+(?:id\s*)?\d|(?:the|this)\s+related[- ]work\s+section|"
    r"this\s+section\s+(?:discusses|reviews|presents|covers|describes))",
    re.IGNORECASE,
)
# The headers of the prompts (crewlib/prompts: Compose, Revise; the Multi-News wording's "summary"), which a small
# model sometimes copies into its answer before the sentence it meant to write.
_PROMPT_ECHO = re.compile(
    r"\b(?:section|summary)\s+(?:does\s+not\s+cite\s+yet|so\s+far)\b|\bone\s+line\s+per\s+paragraph\b|"
    r"\bproblems\s+found\s+in\s+it\b|\bnotes\s+on\s+the\s+works\s+it\s+cites\b|\bwith\s+notes\s*:",
    re.IGNORECASE,
)
# Filler about the target paper itself, words of the prompts ("how it bears on this paper's problem"); without the
# ``positioning`` repair also any "this paper aims / addresses ..." (with it, such a sentence must be supported).
_PROMPT_TARGET = (r"\b(?:(?:this|the\s+target)\s+paper'?s\s+problem"
                  r"|bears\s+on\s+(?:this|the)\s+(?:paper|problem|target)|the\s+target\s+paper")
_ABOUT_TARGET = re.compile(_PROMPT_TARGET + r"|this\s+paper\s+(?:aims|addresses|tackles|focuses|studies))",
                           re.IGNORECASE)
_PROMPT_WORDS = re.compile(_PROMPT_TARGET + ")", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:[Ww]e|[Oo]urs?|[Oo]urselves|us)\b")
_FIRST_PERSON_ANY = re.compile(r"\b(?:we|our|us)\b", re.IGNORECASE)
_FIRST_PERSON_SUBS = (
    (re.compile(r"\b([Ww])e(?:'ve|\s+have)\b"), "the authors have"),
    (re.compile(r"\b([Ww])e(?:'re|\s+are)\b"), "the authors are"),
    (re.compile(r"\b([Ww])e\b"), "the authors"),
    (re.compile(r"\b([Oo])urselves\b"), "themselves"),
    (re.compile(r"\b([Oo])urs\b"), "theirs"),
    (re.compile(r"\b([Oo])ur\b"), "their"),
    (re.compile(r"\b(u)s\b"), "them"),
)
_QUOTED = re.compile(r"(\"[^\"]*\"|“[^”]*”)")
_TITLE_NOTE = re.compile(r"\s*\((?:known|cited)\s+by\s+(?:its\s+)?title\s+only\)", re.IGNORECASE)
# A sentence about specific work: its authors, "this method", a verb that reports a result, a name or a number.
_SPECIFIC = re.compile(
    r"\b(?:the\s+authors?|they|their|them|these\s+authors|(?:both|these|those|such|the\s+two)\s+(?:works|papers|"
    r"methods|approaches|models|systems|studies)|(?:this|that|the|their)\s+(?:work|paper|method|approach|"
    r"model|study|system|framework|technique|dataset|algorithm|architecture)s?|it\s+(?:proposes|introduces|"
    r"presents|uses|shows|achieves|outperforms)|propos\w*|introduc\w*|present(?:s|ed)|demonstrat\w*|outperform\w*|"
    r"achiev\w*|report(?:s|ed)|show(?:s|ed|n))\b",
    re.IGNORECASE,
)
_NAMED = re.compile(r"\b(?:[A-Z][a-z]*[A-Z][\w-]*|[A-Z]{2,}[\w-]*|\w*\d\w*)\b")
_KEYS = re.compile(KEY_GROUP)
_STRAY_STOPS = re.compile(r"([.!?])(?:[ \t]+\.)+(?=\s|$)")  # "[R2]. . The" → "[R2]. The"
_DANGLING_END = re.compile(  # a word that needs an object, then only the citation: "performs well on [R3]."
    r"\b(?P<word>on|for|with|at|about|into|onto|via|the|a|an|its|their|this|these|those|that|which|"
    rf"whose|such)\s*{KEY_GROUP}(?:\s*{KEY_GROUP})*\s*[.!?]?[\"')\]]*\s*$",
    re.IGNORECASE)
_CITING_END = re.compile(  # the phrases that take a cited work as their object
    r"\b(?:(?:based|builds?|built|rel(?:y|ies|ied)|draws?|drawn|follows?|expands?|extends?|improves?|improved)\s+on"
    r"|(?:compared|contrasted|together|along)\s+with)$", re.IGNORECASE)
_CLOSED = re.compile(r"[.!?][\"')\]]*$|\][.!?]?$")
THEME_OPENING = "Several works address"  # a themed paragraph's opening on its theme (crewlib.env.themed_compose)
COPY_THRESHOLD = 0.6  # share of a first-person sentence's content words found in one cited abstract
TARGET_THRESHOLD = 0.7  # share of a sentence's content words found in the target's abstract
CLOSING_REPEAT = 0.9  # overlap at which a sentence on the paper repeats an earlier sentence
TOPIC_COPY_THRESHOLD = 0.8  # support at which an uncited sentence that names no work is a copy of one, cited


@dataclass(frozen=True)
class OutputChecks:
    """The ``output`` block of params: thresholds of the checks and the sentence repairs applied."""

    duplicate_threshold: float  # content-word overlap at which a paragraph repeats another
    sentence_threshold: float  # overlap at which a sentence repeats another (the shorter has ≥ 4 content words)
    support_threshold: float  # lexical support a cited sentence needs from the works it cites
    repairs: tuple[str, ...]

    def __post_init__(self) -> None:
        unknown = sorted(set(self.repairs) - set(REPAIRS))
        if unknown:
            raise ValueError(f"output.repairs: unknown repairs {unknown}; known: {list(REPAIRS)}")

    @classmethod
    def from_params(cls, params: Params) -> OutputChecks:
        block = params.output
        return cls(block.duplicate_threshold, block.sentence_threshold, block.support_threshold, tuple(block.repairs))

    def on(self, repair: str) -> bool:
        return repair in self.repairs


def overlap(a: str, b: str) -> float:
    """Overlap coefficient of the two texts' content words (markers ignored): |A ∩ B| / min(|A|, |B|)."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def near_duplicate(a: str, b: str, threshold: float) -> bool:
    return overlap(a, b) >= threshold


def repeats_sentence(a: str, b: str, threshold: float) -> bool:
    """``a`` says what ``b`` says: the same words, or a content-word overlap ≥ ``threshold`` when the shorter
    of the two has at least four content words (two short sentences share words by chance)."""
    if strip_markers(a).strip().lower() == strip_markers(b).strip().lower():
        return True
    return min(len(content_words(a)), len(content_words(b))) >= 4 and overlap(a, b) >= threshold




def is_meta(sentence: str) -> bool:
    """A sentence about the writing process (draft, workspace, notes, feedback) or a preamble."""
    return bool(_META.search(strip_markers(sentence)))


def echoes_prompt(sentence: str) -> bool:
    """The sentence holds a header of the prompts ("The section so far, one line per paragraph ...")."""
    return bool(_PROMPT_ECHO.search(strip_markers(sentence)))


def strip_prompt_echo(sentence: str) -> str | None:
    """The sentence without the prompt header it opens with (what follows the header's colon, the header's words
    within its first three), None when the header's words are elsewhere in it or nothing follows; the sentence
    unchanged when it echoes no prompt."""
    if not echoes_prompt(sentence):
        return sentence
    head, colon, rest = sentence.partition(":")
    rest = rest.strip()
    opening = _PROMPT_ECHO.search(head + colon)
    if not colon or not opening or len(head[:opening.start()].split()) > 2 or not rest or echoes_prompt(rest):
        return None
    return rest[0].upper() + rest[1:]


def _unquoted(sentence: str) -> str:
    return _QUOTED.sub(" ", strip_markers(sentence))


def is_first_person(sentence: str) -> bool:
    """The sentence speaks as "we / our / us" outside a quotation."""
    return bool(_FIRST_PERSON.search(_unquoted(sentence)))


def third_person(sentence: str) -> str:
    """A cited author's first person as the third person, quotations untouched: "we propose" → "the authors propose"."""
    def swap(part: str) -> str:
        for pattern, replacement in _FIRST_PERSON_SUBS:
            part = pattern.sub(lambda m, r=replacement: r[0].upper() + r[1:] if m.group(1).isupper() else r, part)
        return part

    return "".join(part if _QUOTED.fullmatch(part) else swap(part) for part in _QUOTED.split(sentence))


def as_work(sentence: str) -> str:
    """A sentence about a cited work in the third person: a small model's "This paper proposes X [R3]" (meaning
    [R3]) → "The work proposes X [R3]", its authors' "we" → "the authors"."""
    sentence = re.sub(r"\b(?:[Tt]his|[Oo]ur)\s+(?:paper|work|study|article)\b",
                      lambda m: "The work" if m.start() == 0 else "the work", sentence)
    return third_person(sentence)


def is_first_person_copy(sentence: str, task: Task) -> bool:
    """A sentence in the first person whose words come from a cited paper's abstract (its authors' "we")."""
    if not _FIRST_PERSON_ANY.search(strip_markers(sentence)):  # the critic's check, as the controller was trained
        return False
    refs = [task.reference_by_key[k] for k in find_citation_keys(sentence) if k in task.reference_by_key]
    return any(ref.abstract and containment(sentence, ref.abstract) >= COPY_THRESHOLD for ref in refs)


def describes_target(sentence: str, task: Task) -> bool:
    """A sentence that restates the target paper's abstract (the target presented as related work)."""
    return describes_paper(sentence, task.abstract)


def describes_paper(sentence: str, abstract: str) -> bool:
    """:func:`describes_target` given the paper's abstract."""
    return len(content_words(sentence)) >= 6 and containment(sentence, abstract) >= TARGET_THRESHOLD


def makes_claim(sentence: str) -> bool:
    """A claim about specific work (its authors, "this method", a reported result, a name or a number), as
    opposed to a topic or transition sentence that needs no citation (a themed paragraph's opening, "Several works
    address Transformer-XL.", names its topic: demo target 2 lost it as an uncited claim)."""
    text = _unquoted(sentence)
    return not text.startswith(THEME_OPENING) and bool(_SPECIFIC.search(text) or _NAMED.search(text))


def is_title_note(sentence: str, task: Task) -> bool:
    """An internal note about a work known by its title, or a cited sentence that only restates a pool title."""
    if _TITLE_NOTE.search(sentence):
        return True
    words = content_words(sentence)
    return bool(find_citation_keys(sentence)) and bool(words) and any(
        words <= content_words(ref.title) for ref in task.references)


def is_truncated(text: str) -> bool:
    """The text ends inside a sentence (a generation stopped by its token limit)."""
    stripped = text.rstrip()
    return bool(stripped) and not _CLOSED.search(stripped)


def is_dangling(sentence: str) -> bool:
    """The sentence ends on a word that needs an object followed only by a citation: the citation took the
    object's place ("The model performs well on [R3]."), except after a phrase that takes a work as its object."""
    match = _DANGLING_END.search(sentence)
    return bool(match) and not _CITING_END.search(sentence[:match.end("word")])


def evidence(task: Task, notes: Mapping[str, str] | None = None) -> dict[str, str]:
    """Key → what a sentence citing that work may rest on: its title, abstract and full-text sections, and the
    notes a team took on it (``notes``: key → text). A work known by its title only: its title alone."""
    out = {}
    for key, ref in task.reference_by_key.items():
        if title_only(ref):
            out[key] = ref.title
            continue
        parts = [ref.title, ref.abstract, *(text for _, text in ref.sections), (notes or {}).get(key, "")]
        out[key] = " ".join(p for p in parts if p)
    return out


def _known_keys(sentence: str, sources: Mapping[str, str]) -> list[str]:
    return [k for k in dict.fromkeys(find_citation_keys(sentence)) if k in sources]


def _support(sentence: str, keys: Iterable[str], sources: Mapping[str, str]) -> float:
    return support(sentence, " ".join(sources[k] for k in keys))


def _best_source(sentence: str, sources: Mapping[str, str]) -> tuple[float, str]:
    return max(((support(sentence, body), key) for key, body in sources.items()), default=(0.0, ""),
               key=lambda pair: (pair[0], -int(pair[1][1:]) if pair[1][1:].isdigit() else 0))


def _slipped_source(sentence: str, keys: Iterable[str], texts: Mapping[str, str]) -> str | None:
    """The cited work's sentence ``sentence`` copies with a word broken off, cited; ``texts``: own texts, no notes."""
    return next((cite_sentence(source, key) for key in keys if (source := slipped_copy(sentence, texts[key]))), None)


def _tidy(text: str) -> str:
    """Single spaces, none before punctuation (what removing a marker leaves)."""
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(text.split()))


def cite_sentence(sentence: str, key: str) -> str:
    """``sentence`` with its citations replaced by ``[key]``: where its one citation stood when that is inside
    the sentence ("The authors of [R7] argue ..."), else before its closing punctuation."""
    groups = list(_KEYS.finditer(sentence))
    if len(groups) == 1 and re.search(r"\w", strip_markers(sentence[groups[0].end():])):
        return _tidy(sentence[:groups[0].start()] + f"[{key}]" + sentence[groups[0].end():])
    bare = _tidy(_KEYS.sub("", sentence)) if groups else sentence.rstrip()
    stop = bare[-1] if bare and bare[-1] in ".!?" else ""
    return f"{bare[:len(bare) - len(stop)].rstrip()} [{key}]{stop}"


@dataclass
class SectionReport:
    repeated_paragraphs: int = 0
    duplicated_markers: int = 0
    meta_sentences: int = 0
    truncated: int = 0
    stray_punctuation: int = 0
    title_notes_removed: int = 0  # internal "known by its title only" notes and bare titles
    uncited_attributed: int = 0  # a claim without a citation given its source's key
    uncited_removed: int = 0  # a claim without a citation that no work supports
    first_person_rewritten: int = 0  # a cited author's "we" → "the authors"
    first_person_removed: int = 0  # an uncited first-person sentence
    target_descriptions: int = 0  # sentences restating the target's abstract, removed
    unsupported_reattributed: int = 0  # a cited sentence moved to the work that supports it
    unsupported_removed: int = 0  # a cited sentence no work supports
    repeated_sentences: int = 0
    uncited_paragraphs: int = 0  # a paragraph left without any citation, removed
    dangling_removed: int = 0  # a sentence whose citation stands where its object should be
    prompt_echoes_stripped: int = 0  # a prompt header before a sentence, cut off
    prompt_echoes_removed: int = 0  # a sentence holding a prompt header's words elsewhere
    slips_restored: int = 0  # a near-verbatim copy with a broken word given its source sentence back
    positioning_unsupported: int = 0  # a sentence on the paper itself that the paper's text does not support
    positioning_moved: int = 0  # a paragraph's sentence on the paper moved to its end
    positioning_extra: int = 0  # a second sentence on the paper in one paragraph, removed
    paragraphs_without_positioning: int = 0  # found, not repaired: a paragraph that never relates to the paper
    broken_citation: int = 0  # "... output, as [ [R4]." (form): removed
    verbless: int = 0  # "Probing the knowledge of models for the first time [R3]." (form): removed
    author_year: int = 0  # "(Author et al., 2019)" copied from an abstract beside a key (form): removed, the key kept
    title_opening: int = 0  # "Efficient Models for X: non-parametric models learn ..." (form): the title cut off

    FOUND: ClassVar[tuple[str, ...]] = ("paragraphs_without_positioning",)

    @property
    def repairs(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self) if f.name not in self.FOUND)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def relates_to_paper(sent: str, task: Task, texts: Mapping[str, str]) -> bool:
    """The sentence sets the target paper itself beside the works, in its own voice — not a cited work's copied
    "we", and not the paper's abstract restated ("We introduce BERT": no relation to any work)."""
    return refers_to_paper(sent, task.title) and relates_works(sent) and not copies_cited_voice(
        sent, [texts[k] for k in _known_keys(sent, texts)])


def _without_echo(sent: str, checks: OutputChecks, report: SectionReport) -> str | None:
    """The sentence without a prompt header it opens with; None for no word or a header elsewhere (counted)."""
    if not re.search(r"\w", strip_markers(sent)):
        report.stray_punctuation += 1
        return None
    if checks.on("prompt_echo") and (stripped := strip_prompt_echo(sent)) != sent:
        report.prompt_echoes_removed += stripped is None
        report.prompt_echoes_stripped += stripped is not None
        return stripped
    return sent


def _form(sent: str, task: Task, report: SectionReport) -> str | None:
    """The sentence after the repairs of its form (crewlib.sentence_form), the fault counted; None: removed."""
    sent, fault = repair_form(sent, [r.title for r in task.references])
    if fault:
        setattr(report, fault, getattr(report, fault) + 1)
    return sent


def _positioning(sent: str, task: Task, checks: OutputChecks, works: str, report: SectionReport) -> str | None:
    """A sentence on the paper's place among the works: kept when its own text (and the works', for what it says of
    them) supports it; never with the prompts' words."""
    if checks.on("target") and _PROMPT_WORDS.search(sent):
        report.target_descriptions += 1
        return None
    if not supported_relation(sent, task.target_text, works, checks.support_threshold):
        report.positioning_unsupported += 1
        return None
    return sent


def _repair_sentence(sent: str, task: Task, checks: OutputChecks, sources: Mapping[str, str],
                     report: SectionReport, texts: Mapping[str, str], works: str = "") -> str | None:
    """The sentence after the sentence repairs, or None when it is removed (each counted in ``report``);
    ``works``: the evidence of the works its paragraph cites (for a sentence on the paper itself)."""
    if (sent := _without_echo(sent, checks, report)) is None:
        return None
    if checks.on("title_only") and is_title_note(sent, task):
        report.title_notes_removed += 1
        return None
    if is_meta(sent):
        report.meta_sentences += 1
        return None
    if checks.on("form") and (sent := _form(sent, task, report)) is None:
        return None
    if checks.on("dangling") and is_dangling(sent):
        report.dangling_removed += 1
        return None
    if checks.on("positioning") and relates_to_paper(sent, task, texts):
        return _positioning(sent, task, checks, works, report)
    if checks.on("target") and (_PROMPT_WORDS if checks.on("positioning") else _ABOUT_TARGET).search(sent):
        report.target_descriptions += 1
        return None
    keys = _known_keys(sent, sources)
    if checks.on("positioning") and keys and (work := as_work(sent)) != sent:  # a cited work's voice, as ours
        sent, report.first_person_rewritten = work, report.first_person_rewritten + 1
    if checks.on("first_person") and not keys and is_first_person(sent):  # the target's own voice, uncited
        report.first_person_removed += 1
        return None
    if checks.on("uncited") and not find_citation_keys(sent):
        # A claim about specific work needs its source; any other sentence copied from one gets its key too.
        claim = makes_claim(sent)
        share, key = _best_source(sent, sources)
        if share >= (checks.support_threshold if claim else TOPIC_COPY_THRESHOLD):
            sent, keys = cite_sentence(sent, key), [key]
            report.uncited_attributed += 1
        elif claim:
            report.uncited_removed += 1
            return None
    if checks.on("slips") and (source := _slipped_source(sent, keys, texts)):
        sent = source
        report.slips_restored += 1
    if checks.on("first_person") and is_first_person(sent):
        sent = third_person(sent)
        report.first_person_rewritten += 1
    if checks.on("target") and describes_target(sent, task) and (
            not keys or _support(sent, keys, sources) < containment(sent, task.abstract)):
        report.target_descriptions += 1
        return None
    if checks.on("unsupported") and len(keys) > 1 and any(
            _support(sent, [k], sources) < checks.support_threshold / 2 for k in keys):
        report.unsupported_removed += 1  # a claim about several works that one of them has no part in
        return None
    if checks.on("unsupported") and keys and _support(sent, keys, sources) < checks.support_threshold:
        share, key = _best_source(sent, sources)
        if share < checks.support_threshold:
            report.unsupported_removed += 1
            return None
        sent = cite_sentence(sent, key)
        report.unsupported_reattributed += 1
    return sent


def sentence_gate(task: Task, checks: OutputChecks, notes: Mapping[str, str] | None = None, earlier=()):
    """``keep(sentence, also=())``: a sentence as the final checks leave it, or None where they remove it or it repeats
    one of ``earlier`` (the draft so far) or ``also``: what a Compose asks of a sentence (evidence built once)."""
    texts = evidence(task)
    sources = evidence(task, notes) if notes else texts
    def keep(sent: str, also: Sequence[str] = ()) -> str | None:  # noqa: E306
        kept = _repair_sentence(sent, task, checks, sources, SectionReport(), texts)
        return None if kept is None or any(repeats_sentence(kept, e, checks.sentence_threshold)
                                           for e in [*earlier, *also]) else kept
    return keep


def sentence_kept(sent: str, task: Task, checks: OutputChecks, notes=None, earlier=()) -> str | None:
    return sentence_gate(task, checks, notes, earlier)(sent)  # one sentence through sentence_gate


def finish_section(text: str, task: Task, checks: OutputChecks,
                   notes: Mapping[str, str] | None = None) -> tuple[str, SectionReport]:
    """The section with the repairs of the module docstring applied, and what was repaired.

    ``checks``: the ``output`` settings; ``notes``: key → the notes a team took on that work, evidence beside
    its abstract.
    """
    texts = evidence(task)
    sources = evidence(task, notes) if notes else texts
    report = SectionReport()
    text, report.duplicated_markers = dedupe_markers(text)
    if checks.on("markers"):
        text, merged = merge_marker_runs(text)
        report.duplicated_markers += merged
    text, report.stray_punctuation = _STRAY_STOPS.subn(r"\1", text)
    text = _TITLE_NOTE.sub("", text) if checks.on("title_only") else text
    kept: list[str] = []
    kept_sentences: list[str] = []
    blocks = paragraphs(text)
    for i, block in enumerate(blocks):
        sents = sentences(block)
        if (i == len(blocks) - 1 or checks.on("truncated")) and sents and is_truncated(block):
            report.truncated += 1
            if kept or len(sents) > 1:  # a text that is one cut sentence is kept (counted), not emptied
                sents = sents[:-1]
        clean, closing, ends_on_closing = [], [], False
        works = " ".join(sources[k] for k in _known_keys(block, sources))
        for sent in sents:
            repaired = _repair_sentence(sent, task, checks, sources, report, texts, works)
            if repaired is None:
                continue
            ends_on_closing = checks.on("positioning") and relates_to_paper(repaired, task, texts)
            # Sentences on the paper share the paper's words by design: they repeat one another only when nearly equal.
            threshold = max(checks.sentence_threshold, CLOSING_REPEAT) if ends_on_closing else checks.sentence_threshold
            if checks.on("repeated_sentences") and any(
                    repeats_sentence(repaired, s, threshold) for s in kept_sentences + clean + closing):
                report.repeated_sentences += 1
                continue
            (closing if ends_on_closing else clean).append(repaired)
        if closing:  # the paragraph ends on its one sentence on the paper (the last written)
            report.positioning_extra += len(closing) - 1
            report.positioning_moved += not ends_on_closing
            clean.append(closing[-1])
        elif checks.on("positioning") and clean:
            report.paragraphs_without_positioning += 1
        block = " ".join(clean)
        if not block:
            continue
        if checks.on("uncited") and not find_citation_keys(block):
            report.uncited_paragraphs += 1
            continue
        if any(near_duplicate(block, earlier, checks.duplicate_threshold) for earlier in kept):
            report.repeated_paragraphs += 1
            continue
        kept.append(block)
        kept_sentences += clean
    return "\n\n".join(kept), report


def section_faults(text: str, task: Task, checks: OutputChecks, notes: Mapping[str, str] | None = None) -> dict:
    """What a reviewer's basic checks find in a finished section, without repairing it: repeated sentences,
    first-person sentences, uncited claims, unsupported cited sentences (the quality benchmark's counts). With the
    ``positioning`` repair, a sentence on the paper itself in its own voice is held to the paper's text instead
    (``positioning_sentences``, ``unsupported_positioning``) and is no first-person, uncited or unsupported fault."""
    return count_faults(text, evidence(task, notes), checks, texts=evidence(task),
                        paper=task if checks.on("positioning") else None)


def count_faults(text: str, sources: Mapping[str, str], checks: OutputChecks,
                 texts: Mapping[str, str] | None = None, paper: Task | None = None) -> dict:
    """:func:`section_faults` with the evidence given (key → the text a sentence citing it may rest on; ``texts``:
    the works' own texts, for slips, default ``sources``; ``paper``: the target, whose own sentences are judged
    apart); ``cited_sentences``: the sentences citing a known work."""
    texts = texts or sources
    relating = unsupported_relating = 0
    sents = []
    for block in paragraphs(text):
        works = " ".join(sources[k] for k in _known_keys(block, sources))
        for s in sentences(block):
            if paper is not None and relates_to_paper(s, paper, texts):
                relating += 1
                unsupported_relating += not supported_relation(s, paper.target_text, works, checks.support_threshold)
            else:
                sents.append(s)
    supports = support_scores("\n\n".join(sents), sources)
    return {
        "sentences": len(sents) + relating,
        "positioning_sentences": relating,
        "unsupported_positioning": unsupported_relating,
        "cited_sentences": len(supports),
        "repeated_sentences": sum(any(repeats_sentence(s, e, checks.sentence_threshold) for e in sents[:i])
                                  for i, s in enumerate(sents)),
        "first_person": sum(is_first_person(s) for s in sents),
        "uncited_claims": sum(not find_citation_keys(s) and makes_claim(s) for s in sents),
        "unsupported": sum(v < checks.support_threshold for v in supports),
        "title_notes": sum(bool(_TITLE_NOTE.search(s)) for s in sents),
        "dangling": sum(is_dangling(s) for s in sents),
        "prompt_echoes": sum(echoes_prompt(s) for s in sents),
        "slips": sum(_slipped_source(s, _known_keys(s, sources), texts) is not None for s in sents),
    }


def support_scores(text: str, sources: Mapping[str, str]) -> list[float]:
    """The lexical support of each sentence that cites a known work, by the evidence of the works it cites."""
    sents = [s for p in paragraphs(text) for s in sentences(p)]
    return [_support(s, _known_keys(s, sources), sources) for s in sents if _known_keys(s, sources)]


def repeated_paragraph_count(text: str, threshold: float) -> int:
    """Paragraphs that near-duplicate an earlier one (the quality benchmark's repetition count)."""
    blocks = paragraphs(text)
    return sum(any(near_duplicate(b, a, threshold) for a in blocks[:i]) for i, b in enumerate(blocks))
