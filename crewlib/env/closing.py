"""The closing sentence of a themed paragraph from the paper's own words (docs/method.md, "A paragraph that relates").

When the composer's closing is not true of the paper, :func:`fallback_position` builds one from the sentence of the
paper's own text (title, abstract, introduction) closest to the paragraph's works, opened by the relation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crewlib.citations import find_citation_keys
from crewlib.positioning import copies_cited_voice, refers_to_paper
from crewlib.sections import CLOSING_REPEAT, is_meta, repeats_sentence
from crewlib.text import content_words, sentences, stems, strip_markers

# How the fallback closing sentence opens, by relation (the paper's own sentence follows).
RELATION_OPENINGS = {"builds_on": "Building on these works", "differs": "Unlike these works",
                     "addresses_gap": "Going beyond what these works leave open"}
# The relation as a clause, when the paper's sentence that follows does not speak of the paper itself.
RELATION_CLAUSES = {"builds_on": "This paper builds on these works", "differs": "This paper differs from these works",
                    "addresses_gap": "This paper addresses what these works leave open"}

# A word pointing back to an earlier sentence of the paper's text ("This paper applies it to ..."): such a sentence
# closes a paragraph only when no other is left.
_BACK_REFERENCE = re.compile(r"\b(?:it|its|they|them|their|this|these|those|such)\b", re.IGNORECASE)
BACK_REFERENCE_WORDS = 3  # content words a pronoun needs before it to point inside its own sentence
# What a paper found, not what it does: a closing from it says where the paper ends up, not where it stands.
_RESULT = re.compile(r"\b(?:outperform\w*|surpass\w*|achiev\w*|results?|scores?|accuracy|state-of-the-art|prefer\w*|"
                     r"gains?|\d+(?:\.\d+)?\s?%)", re.IGNORECASE)
_PAPER = re.compile(r"\b(?:this|the)\s+(?:paper|work|study)\b", re.IGNORECASE)

# A pointer to the paper's figures or tables ("see Fig. 1 for an example"): no closing sentence of a section.
_FIGURE = re.compile(r"\b(?:Fig(?:ure)?s?|Tables?|Sec(?:tion)?s?|Eq(?:uation)?s?)\.?\s*~?\d", re.IGNORECASE)
# A citation by name in the paper's text (its introduction's "Smith et al. (2019)", "(Doe, 2020)").
_CITED_BY_NAME = re.compile(r"\bet al\b|\((?:[^()]*\D)?(?:19|20)\d{2}[a-z]?\)")

REPEAT_OVERLAP = CLOSING_REPEAT  # a closing sentence repeats an earlier one (as the output checks judge it)

def closed(text: str) -> str:
    """The text on one line, ended by a stop."""
    text = " ".join(text.split()).strip()
    return text if text.endswith((".", "!", "?")) else f"{text.rstrip(',;:')}."


def _paper_text_sentences(paper_text: str) -> list[str]:
    """The sentences of the paper's text (title, abstract, introduction) that state something: four content words
    or more, closed by a stop, citing nothing (no key, no author–year) — in order."""
    text = paper_text.replace("From the introduction:", " ")
    return [s for s in sentences(" ".join(text.split()))
            if len(content_words(s)) >= 4 and s.endswith(".") and not find_citation_keys(s)
            and not _CITED_BY_NAME.search(s) and not _FIGURE.search(s)]


def repeats(sentence: str, earlier: Sequence[str]) -> bool:
    """Whether ``sentence`` repeats one of ``earlier`` (as the output checks judge a repeated closing)."""
    return any(repeats_sentence(sentence, e, REPEAT_OVERLAP) for e in earlier)


def _in_paper_voice(sentence: str) -> str:
    """A sentence of the paper's text as the paper's authors say it after a colon: "the authors" of the paper's
    own abstract are "we", and "The paper ..." opening it is "it ..."."""
    sentence = re.sub(r"^(?:The|This)\s+(?:paper|work|study)\b", "it", sentence)
    sentence = re.sub(r"\b[Tt]he authors\b", "we", sentence)
    return sentence


def fallback_position(relation: str, paper_text: str, works_text: str, earlier: Sequence[str] = (),
                      voices: Sequence[str] = ()) -> str | None:
    """A closing sentence from the paper's own words: the sentence of its text (title, abstract, introduction)
    that shares the most content stems with the works, a sentence on what the paper found ("... outperforms",
    "scores", "%") counted one stem less than one on what it does (on a tie, one that speaks of the paper, then the
    first; one pointing back to an earlier sentence — "This paper applies it to ..." — only when no other is left) and
    that no ``earlier`` closing repeats. A sentence about the paper itself ("We ...", "In this paper, we ...")
    is opened by the relation ("Unlike these works, we ..."; an opening "The authors present ..." is "we present
    ..."); any other follows the relation stated as a clause ("This paper differs from these works: at inference
    time the extra streams are discarded ...", its "the authors" the paper's "we"). A closing whose words one of
    ``voices`` (the cited works' texts) holds is that work's voice, not the paper's, and is passed over (paper 77:
    "This paper builds on these works: given a query, the task of NLVL is to localize ..." — the task's definition,
    in the works' abstracts too). None when the paper's text has no sentence left."""
    own = [s for s in _paper_text_sentences(paper_text)]
    works = stems(works_text)
    ranked = sorted(range(len(own)), key=lambda i: (points_back(own[i]),
                                                    bool(_RESULT.search(own[i])) - len(stems(own[i]) & works),
                                                    not refers_to_paper(own[i]), i))
    for i in ranked:
        best = re.sub(r"^The authors\b", "We", strip_markers(own[i]).strip())  # "The authors present LongT5"
        if is_meta(best):  # the output checks would remove it ("… features of the shared workspace": crew write --tex)
            continue
        if refers_to_paper(best) and not re.match(r"^The\s+(?:paper|work|study)\b", best):
            best = re.sub(r"^(?:In\s+this\s+(?:paper|work),?\s+)", "", best)
            closing = closed(f"{RELATION_OPENINGS[relation]}, {best[0].lower()}{best[1:]}")
        else:
            closing = closed(f"{RELATION_CLAUSES[relation]}: {lower_first(_in_paper_voice(best))}")
        if not repeats(closing, earlier) and not repeats(best, earlier) and not copies_cited_voice(closing, voices):
            return closing
    return None


def points_back(sentence: str) -> bool:
    """Whether the sentence leans on the one before it: a pronoun or demonstrative ("it", "these", "such") with
    fewer than :data:`BACK_REFERENCE_WORDS` content words ahead of it ("This paper applies it to natural language";
    "These methods ..."). One further on points inside its own sentence ("The policy is optimised with PPO, and a KL
    penalty keeps it close to the original language model")."""
    text = _PAPER.sub(" ", sentence)
    return any(len(content_words(text[:m.start()])) < BACK_REFERENCE_WORDS for m in _BACK_REFERENCE.finditer(text))


def lower_first(sentence: str) -> str:
    """The sentence with its first letter lower-cased when its first word is an ordinary capitalised word ("The
    authors" → "the authors"; "BERT", "ELMo", "GPT-2" stay)."""
    first = sentence.split(" ", 1)[0]
    ordinary = first.isalpha() and (first[1:].islower() or first == "A")
    return f"{sentence[0].lower()}{sentence[1:]}" if ordinary else sentence
