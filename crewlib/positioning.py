"""Sentences that relate prior work to the target paper: what they are, and when the paper's own text supports them.

A related-work section positions the paper among the works it cites (RWGBench's framing: "selecting,
organizing, and framing prior work to clarify how a target paper relates to, differs from, and contributes
beyond existing research"; docs/method.md, "Positioning"). Such a sentence speaks of the paper itself — "this
paper", "our work", "we" — and may say only what the paper's title, abstract or introduction says about it.
The checks of every system's section (:mod:`crewlib.sections`) and the evaluation's measures
(:mod:`crewlib.eval.relating`) use these definitions, so that a section is held to what it is scored on.

- :func:`refers_to_paper` — the sentence speaks of the target paper itself;
- :func:`relates_works` — it relates something to the works (a citation, "unlike", "builds on", "these works" ...):
  "We introduce BERT." speaks of the paper but places it nowhere (the abstract restated, not positioning);
- :func:`relation_support` — how much of what the sentence says the paper's text (and, for the words it
  says about the works, the cited works' text) holds;
- :func:`is_positioning` — both: a self-reference that is not a cited author's copied "we", supported.
"""

from __future__ import annotations

import re

from crewlib.text import containment, stems, strip_markers

# The paper speaking of itself: "this paper", "the present work", "our approach", "we", "us". ("here" and "in
# contrast" alone relate works to each other, not to the paper.)
# ("this method", "this model" name the work just cited more often than the paper: not a self-reference.)
_SELF = re.compile(r"\b(?:this|the\s+present|the\s+current)\s+(?:paper|work|study|article|thesis)\b"
                   r"|\b(?:we|our|ours|us)\b", re.IGNORECASE)
# The paper set beside the works: a comparison, a debt, a gap, or the works named ("these approaches", "prior work").
_RELATION_CUE = re.compile(
    r"\b(?:unlike|in\s+contrast|contrary|whereas|while|instead|rather\s+than|differ\w*|different(?:ly)?|similar\w*|"
    r"like|likewise|as\s+in|build(?:s|ing)?\s+(?:on|upon)|built\s+(?:on|upon)|extend\w*|follow\w*|inspired|"
    r"motivated|complement\w*|compared\s+(?:to|with)|in\s+comparison|beyond|improv\w*\s+(?:on|over|upon)|"
    r"address\w*|leave|leaves|left\s+open|"
    r"gap|than|these|those|such|prior|previous\w*|existing|earlier|related|them|their|other)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")

# Words that state a relation, not a fact: they need no support from either text ("Unlike these approaches,
# this paper ..."). Compared as stems (crewlib.text.stems: the first five letters of a content word).
RELATION_WORDS = (
    "unlike", "contrast", "contrary", "whereas", "while", "both", "similar", "similarly", "differ", "differs",
    "different", "difference", "differently", "instead", "rather", "however", "build", "builds", "built",
    "extend", "extends", "extension", "address", "addresses", "addressed", "leave", "leaves", "left", "open",
    "gap", "complement", "complementary", "line", "lines", "prior", "previous", "previously", "existing",
    "earlier", "related", "work", "works", "paper", "papers", "study", "studies", "approach", "approaches",
    "method", "methods", "present", "current", "here", "focus", "focuses", "focused", "other", "others",
    "share", "shares", "common", "together", "group", "like", "follow", "follows", "following", "inspired",
    "motivated", "closely", "close", "closest", "most", "more", "less", "rely", "relies", "only", "does",
    "do", "did", "not", "none", "neither", "nor", "all", "each", "them", "itself", "ours", "propose",
    "proposed", "proposes",
    # words of no content that a sentence on the paper uses freely (measured on real human sections, where "through",
    # "hence", "same", "time" and the like made supported sentences look unsupported)
    "through", "hence", "thus", "therefore", "same", "time", "worth", "keep", "keeps", "whole", "well", "also",
    "make", "makes", "made", "much", "many", "such", "way", "ways", "still", "further", "furthermore", "moreover",
    "knowledge", "aware", "however", "although", "though", "since", "because", "thereby", "able",
    "allow", "allows", "enable", "enables", "using", "used", "use", "uses", "without", "within", "across", "based",
)
RELATION_STEMS = frozenset(w[:5] for w in RELATION_WORDS)
COPIED_VOICE = 0.6  # share of a first-person sentence's content words found in one cited work's text: its voice


def target_name(title: str) -> str | None:
    """The paper's short name when its title has one ("ProphetNet: Predicting ..." → "ProphetNet")."""
    head, sep, _ = title.partition(":")
    return head.strip() if sep and 0 < len(head.split()) <= 2 else None


def refers_to_paper(sentence: str, title: str = "") -> bool:
    """The sentence speaks of the target paper itself ("this paper", "our approach", "we", or the paper's short
    name from ``title``), outside quotations and citation markers."""
    text = _QUOTED.sub(" ", strip_markers(sentence))
    if _SELF.search(text):
        return True
    name = target_name(title)
    return bool(name) and bool(re.search(rf"\b{re.escape(name)}\b", text))


def relates_works(sentence: str) -> bool:
    """The sentence sets something beside the works: it cites one, or holds a word of relation (``_RELATION_CUE``)."""
    return bool(re.search(r"\[[^\[\]]+\]", sentence)) or bool(_RELATION_CUE.search(_QUOTED.sub(" ", sentence)))


def claim_stems(sentence: str) -> frozenset[str]:
    """The stems a relating sentence must find support for: its content stems less the words of relation."""
    return stems(strip_markers(sentence)) - RELATION_STEMS


def relation_support(sentence: str, paper_text: str, works_text: str = "") -> tuple[float, float]:
    """(supported, own) shares of the sentence's claim stems (:func:`claim_stems`): ``own`` those the paper's
    text (``paper_text``: title, abstract, introduction) holds; ``supported`` those it or the text of the works
    the sentence relates to (``works_text``) holds. A sentence with no claim stem scores (0, 0): it says nothing."""
    words = claim_stems(sentence)
    if not words:
        return 0.0, 0.0
    own = words & stems(paper_text)
    backed = own | (words & stems(works_text))
    return len(backed) / len(words), len(own) / len(words)


def supported_relation(sentence: str, paper_text: str, works_text: str, threshold: float,
                       own_share: float | None = None) -> bool:
    """The relating sentence says what the texts hold, half of it the paper's own: ``supported`` ≥ ``threshold``
    (the output checks' ``support_threshold``, as for a cited sentence and its works) and ``own`` ≥ ``own_share``
    (default ``threshold``). On real human sections (five recent papers, their introductions given) this keeps
    two thirds of the paragraphs' positioning sentences. The themed Compose asks more of its own closing sentence
    (``own_share`` (1 + ``threshold``) / 2): the 1.5B's "This paper builds on [R1] by using WebText and ELMo to ..."
    — a work's words with the paper's in front, a false claim about the paper — reaches 0.6."""
    supported, own = relation_support(sentence, paper_text, works_text)
    return supported >= threshold and own >= (threshold if own_share is None else own_share)


def copies_cited_voice(sentence: str, works_texts: list[str]) -> bool:
    """A first-person sentence whose words come from one cited work's text: its authors' "we", not the paper's."""
    return any(text and containment(sentence, text) >= COPIED_VOICE for text in works_texts)


def is_positioning(sentence: str, title: str, paper_text: str, works_texts: list[str], threshold: float,
                   cites: bool = False) -> bool:
    """A sentence relating the works to the target paper that the paper's text supports: it refers to the paper
    (:func:`refers_to_paper`), relates it to the works (:func:`relates_works`; ``cites``: the sentence cited a work
    before its citations were cut out), is not a cited work's copied voice, and passes :func:`supported_relation`
    (``works_texts``: the texts of the works it cites, or of its paragraph's works)."""
    return (refers_to_paper(sentence, title) and (cites or relates_works(sentence))
            and not copies_cited_voice(sentence, works_texts)
            and supported_relation(sentence, f"{title}. {paper_text}", " ".join(works_texts), threshold))
