"""Faults of sentence form the other output checks miss (issue 45): a sentence broken at its citation, a
sentence without a main verb, an author–year citation copied out of an abstract, a pool title pasted as a
sentence's opening. Pure functions on one sentence; :func:`repair_form` applies them in turn.

The verb test is a tagger-free heuristic (no POS model offline): a sentence is verbless when no word is, or
by its neighbours reads as, a finite verb. It leans to finding one: a real sentence flagged is worse than a
fragment missed (``benchmarks/sentence_form_false_positives.py`` measures it on human sections).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from crewlib.citations import KEY_GROUP, find_author_year_citations, find_citation_keys
from crewlib.text import stems

FAULTS = ("broken_citation", "verbless", "author_year", "title_opening")
_KEY_GROUP = re.compile(KEY_GROUP)
# A word that needs a clause, then only citations: "... output, as [R4]." ("such as [R2]" names works: fine).
_CUT_AT_CITATION = re.compile(r"(?<!such )(?<!well )(?<!same )\b(?:as|because|whereas|although|though|while|if|"
                              rf"unless|thus|hence|so)\s*(?:{KEY_GROUP}\s*)+[.!?]?[\"')\]]*\s*$", re.I)
_HEADING = re.compile(r"^\s*(?:#+\s.*|\*\*[^*]+\*\*[.:]?|__[^_]+__[.:]?)\s*$")
_ABBREVIATED_END = re.compile(r"(?<![A-Za-z])(?:et al|e\.g|i\.e|cf|vs|etc)[._]*\s*$")
_CLOSED = re.compile(r"[.!?][\"')\]*_]*\s*$")
_TOKEN = re.compile(r"<CIT>|(?:e\.g|i\.e|et al|cf|vs|etc)\.|[A-Za-z][A-Za-z'\-]*|\d[\d.,%]*|\S")
# One author–year item of a parenthetical list: "Smith et al., 2020", "Doe,2021a", "Xiao et al., 2021a,b".
_LISTED = re.compile(r"^(?:e\.g\.,?|see|cf\.|also)?\s*[A-Z][\w'\-]+(?:\s+[\w'\-.&]+){0,4},?\s*(?:19|20)\d{2}[a-z]?"
                     r"(?:,\s*[a-z])*$")


_words = lambda *groups, ends=("",): frozenset(w + end for group in groups for w in group.split() for end in ends)
_AUXILIARY = _words("is are was were am has have had do does did can could may might will would shall should must",
                    "cannot can't won't isn't aren't wasn't weren't doesn't don't didn't hasn't haven't it's")
_IRREGULAR_PAST = _words("made took gave found built brought began led won saw became held kept left met ran sought",
                         "taught thought told went came got wrote chose drew fell grew knew meant spent stood",
                         "understood overcame undertook rose threw lost paid said sent sold shown")
_FUNCTION = _words("a an the its their our his her my your each every some any no all both many most more less few",
                   "several such other another of in on at for to with by from into onto over under between among",
                   "through via about against across within without upon per than as like and or nor but yet so",
                   "if whether because while whereas although though since when where how what why not very only",
                   "also e.g. i.e. cf. vs. etc. here then thus hence however further namely either neither",
                   "up down out off")  # particles: "speeding up the efficiency" has no finite "up"
_SUBJECT_PRONOUN = _words("it he she this that which who one they we you i these those there")
_PLURAL_PRONOUN = _words("they we you i these those which who that them others both many several few")
_DETERMINER = _words("the a an their its this these those our his her each every")
_LIST_GOES_ON = _words(", and or <CIT> ) . ; : etc.")
_ADVERB = _words("also first then further often still only recently usually typically generally instead even later",
                 "always never already mainly mostly largely simply directly jointly explicitly implicitly not")
_ADJECTIVE = _words("new large small deep recent different efficient various multiple early prior previous",
                    "existing novel simple strong weak good better best high low long short open public same similar",
                    "single joint human key main")
_ADJECTIVE_END = ("al", "ic", "tive", "sive", "ous", "ful", "able", "ible", "less", "ary", "ed", "ing")
_NOUN_END = ("off", "up", "ing", "ion", "ment", "ness", "ity", "ance", "ence")
_NOT_PLURAL_END = ("ss", "us", "is", "'s")
_LOOKALIKE = _words("enable disable vary reveal deal appeal conceal signal mimic bring",  # and "-al" nouns:
                    "retrieval proposal removal approval arrival survival trial tutorial journal interval material",
                    "manual terminal portal renewal disposal denial withdrawal reversal dismissal appraisal")
_IRREGULAR_PLURAL = _words("data criteria phenomena corpora people children media indices matrices")
_LY_VERBS, _IMPERATIVE = _words("rely apply supply reply imply comply multiply"), _words("see refer note consider let")
_TAKES_TO = _words("seem tend aim fail try appear continue attempt choose manage struggle want learn need seek")
_TAKES_PREP = _words("consist account allow search call stand opt ask look compensate speak think work advocate argue",
                     "aim strive deal cope interact align compete agree correlate coincide collaborate experiment",
                     "struggle improve vary differ grow increase decrease", ends=("", "s", "es"))  # "of/for/with"
_VERB_ONLY = _words("propose introduce present employ adopt exploit explore investigate tackle achieve obtain improve",
                    "outperform extend demonstrate suggest argue observe predict generate produce require provide",
                    "incorporate combine utilize develop construct consider rely depend yield enable leverage")
_tokens = lambda sentence: _TOKEN.findall(_KEY_GROUP.sub(" <CIT> ", re.sub(r"[*_]+", "", sentence)))
_is_word = lambda token: token[:1].isalpha() and token not in ("e.g.", "i.e.", "cf.", "vs.", "etc.", "et al.")
_named = lambda token: any(c.isupper() or c.isdigit() for c in token[1:])  # "GPT-3", "BERT", "CLIPpy"
_plural = lambda w: w in _IRREGULAR_PLURAL or len(w) > 3 and w.endswith("s") and not w.endswith(_NOT_PLURAL_END)
_adverb = lambda word: word in _ADVERB or (word.endswith("ly") and word not in _LY_VERBS)
_adjective = lambda w: w in _ADJECTIVE or (
    w.endswith(_ADJECTIVE_END) and w.replace("-", "").isalpha() and w not in _LOOKALIKE)
# the project's author–year citations less an acronym before a year ("WMT (2014)": a venue, a test set)
_author_year = lambda text: [c for c in find_author_year_citations(text) if not re.match(r"\(?[A-Z\d\-]{2,}\b", c)]
_subject = lambda token: token in ("<CIT>", ")", "]", "et al.") or token[0].isdigit() or (  # what a verb may follow
    token.lower() in _SUBJECT_PRONOUN or _is_word(token) and token.lower() not in _FUNCTION)


def _finite_at(toks: list[str], i: int) -> bool:
    """Whether ``toks[i]`` reads as a finite verb given the tokens around it."""
    word, low, j = toks[i], toks[i].lower(), i - 1
    while j >= 0 and _is_word(toks[j]) and (_adverb(toks[j].lower()) or toks[j] in ("and", "or") and j > 0
                                            and _adverb(toks[j - 1].lower())):
        j -= 1  # "[R9] first propose", "the model directly predicts", "we theoretically and empirically show"
    if low in _AUXILIARY or low in _IMPERATIVE and (j < 0 or toks[j] in (",", "(", ";", ":")):
        return True  # "is", "can"; "For a survey, see [R2]."
    past = (low.endswith("ed") and len(low) > 3 and low not in ("based", "indeed", "hundred")) or low in _IRREGULAR_PAST
    if j < 0 or not _is_word(word) or word != low or low in _FUNCTION or _adverb(low) or (_adjective(low) and not past):
        return False  # a first word is a subject's or a gerund's ("Probing the ..."); "-ing" forms are not finite
    after = toks[i + 1].lower() if i + 1 < len(toks) else ""
    prev, plow, skipped = toks[j], toks[j].lower(), j < i - 1
    if prev == ",":  # the end of an insert ("SwinIR, a strong baseline, demonstrates"), or a list's next item
        if after in _DETERMINER or after == "to" or (_plural(low) and after not in _LIST_GOES_ON):
            return True
        k = max((k for k in range(max(j - 6, 0), j) if toks[k] == ","), default=0)
        if k < 1 or after in _LIST_GOES_ON:
            return False
        j, skipped, prev, plow = k - 1, False, toks[k - 1], toks[k - 1].lower()  # "X, PWC-Net [R8], used ..."
    modifier = _is_word(prev) and not _named(prev) and (j == 0 or prev == plow) and (  # an adjective before a noun
        _adjective(plow) or "-" in plow and not plow.endswith(_NOUN_END))  # "Neural models", "related-work sections"
    if past:
        return _subject(prev) and not modifier  # past tense: "[R3] proposed", "the authors found"
    if after in ("of", "for", "with") and low not in _TAKES_PREP and prev not in ("<CIT>", ")", "et al."):
        return False  # "models for long documents", "knowledge of", "embeddings with"
    if _subject(prev) and (skipped or after in _DETERMINER or low in _VERB_ONLY or after == "to" and not modifier
                           and (_plural(low) or low in _TAKES_TO)):
        return True  # "benchmarks further strengthens", "real data hinder the", "segmentations aims to"
    if _plural(low) and low.endswith("s"):  # "BERT [R1] pretrains", "the model uses", "deep learning achieves"
        return _subject(prev) and not _plural(plow) and not (modifier and not (plow.endswith("ing") and j))
    return prev in ("<CIT>", ")", "et al.") or plow in _PLURAL_PRONOUN or _is_word(prev) and (  # "[R10] find"
        _named(prev) or prev[0].isupper() and j > 0 or _plural(plow) and not _adjective(plow))  # "Transformers rely"


def lacks_main_verb(sentence: str) -> bool:
    """No word reads as a finite verb: a noun phrase ("A new benchmark for multilingual discourse phenomena
    [R2].") or a gerund phrase ("Probing the knowledge of ... [R3].") as a sentence. Not judged: a heading
    ("**Knowledge distillation.**", an uncited Title Case line), a piece cut at an abbreviation ("Smith et al."),
    an unfinished piece (no closing stop: the truncation check's), fewer than three words."""
    toks, cased = _tokens(sentence), lambda t: t[0].isupper() or not _is_word(t) or len(t) < 4
    if _HEADING.match(sentence) or _ABBREVIATED_END.search(sentence) or not _CLOSED.search(sentence) or sum(
            map(_is_word, toks)) < 3 or ("<CIT>" not in toks and all(map(cased, toks))):
        return False
    return not any(_finite_at(toks, i) for i in range(len(toks)))


def broken_at_citation(sentence: str) -> bool:
    """The sentence breaks at a citation: a bracket left open ("output, as [ [R4]."), a key's end without its
    start ("1] and [R10] propose"), "[ ]", or a word that needs a clause before only citations ("as [R4].")."""
    rest = re.sub(r"\[[^\[\]]*\]", " ", sentence)
    return "[" in rest or bool(re.search(r"(?:^|R?\d+|,)\s*\]", rest) or re.search(r"\[\s*\]", sentence)
                               or _CUT_AT_CITATION.search(sentence))


def strip_copied_author_year(sentence: str) -> tuple[str, int]:
    """The sentence without the author–year citations copied from abstracts, when it cites a key, and how many
    were removed: "... graphs (Author et al., 2019) [R5]." → "... graphs [R5]."; "Smith et al. (2021) show ...
    [R3]." → "Smith et al. show ... [R3]."; a sentence citing no key is returned as it is, with 0."""
    if not find_citation_keys(sentence):
        return sentence, 0
    counts: list[int] = []  # how many each removal took out

    def parenthetical(match: re.Match) -> str:  # one of author–year citations only ("Smith, 2020; Doe, 2021"): all
        items = [item.strip() for item in match.group(1).split(";")]
        if not _author_year(f"({match.group(1)}") or not all(map(_LISTED.match, items)):
            return match.group(0)
        counts.append(len(items))
        return " "

    text = re.sub(r"\s*\(([^()]*)\)", parenthetical, sentence)
    for cite in (cite for cite in _author_year(text) if cite in text):  # not one a removal before took
        end, paren = (start := text.find(cite)) + len(cite), cite.find("(", 1)
        if paren > 0:  # narrative "Smith et al. (2021)": the year's parentheses go, the name stays
            close = text.find(")", start + paren)
            start, end = start + paren, (close + 1 if close > 0 else end)
        elif cite[0] == "(" or text.rfind("(", 0, start) > text.rfind(")", 0, start):
            start += cite[0] == "("  # one item of a parenthetical with more in it: "(e.g., BERT; Devlin et al., 2019)"
        else:  # bare "Smith et al., 2021": the name stays
            start += len(re.sub(r",?\s+(?:19|20)\d{2}[a-z]?$", "", cite))
        text = text[:start] + text[end:]
        counts.append(1)
    if not counts:
        return sentence, 0
    text = re.sub(r"\(\s*\)", "", re.sub(r"\s*[;,]\s*\)", ")", re.sub(r"\(\s*[;,]\s*", "(", text)))
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(text.split())), sum(counts)


def strip_title_opening(sentence: str, titles: Iterable[str]) -> str | None:
    """The sentence without a pool work's title pasted as its opening ("Efficient Models for X: non-parametric
    models learn ... [R3]." → "Non-parametric models learn ... [R3]."; a revision's "On Decoding Strategies for
    Neural Text Generators; [R6] Loss truncation outperforms ..." on a recent paper), citations kept; None if it
    opens with no title: an opening whose content stems overlap a title's (or its part before a colon) by 0.8
    (Jaccard); or the whole title run into the sentence with no stop ("Improving Language Understanding by Generative
    Pre-Training the work, the first GPT, trains ..." of the 0.5B in notebook 03: a title of four words or more, then
    a new subject — "the", "this", "it", "we" ...; "Proximal policy optimization clips ..." opens on its name)."""
    for title in (t.strip() for t in titles):  # a short title is a name a sentence may open on: "PPO clips ..."
        if len(title.split()) >= 4 and sentence.lower().startswith(title.lower()) and \
                re.match(r"\s+(?:the|a|an|this|these|it|its|their|we|our)\b", sentence[len(title):]):
            rest = sentence[len(title):].strip()
            return rest[0].upper() + rest[1:]
    parts = [stems(part) for title in titles for part in (title, re.split(r"\s*[:\u2013\u2014]\s+|\s+-\s+", title)[0])]
    parts = [words for words in parts if len(words) >= 2]
    for colon in (m.start() for m in re.finditer(r"[:;](?=\s)", sentence)):  # or ";" (a revision: "Title; [R6] X")
        opening, rest = sentence[:colon], sentence[colon + 1:].strip()
        words = stems(opening)
        if len(words) < 2 or not re.search(r"[A-Za-z]{2}", rest) or not any(
                len(words & part) / len(words | part) >= 0.8 for part in parts):
            continue
        rest = rest[0].upper() + rest[1:] if re.match(r"[a-z][a-z\-]*\b(?![\-\w])", rest) else rest
        if keys := [k for k in _KEY_GROUP.findall(opening) if k not in rest]:  # the title's citation moves to the end
            stop = rest[-1] if rest[-1] in ".!?" else ""
            rest = f"{rest[:len(rest) - len(stop)].rstrip()} {' '.join(keys)}{stop}"
        return rest
    return None


def repair_form(sentence: str, titles: Iterable[str]) -> tuple[str | None, str | None]:
    """(the sentence repaired, or None to remove it; the fault found, or None; names in :data:`FAULTS`). A
    sentence broken at its citation or without a main verb is removed; an author–year citation is removed
    from a sentence that cites a key, and a sentence citing one with no key is removed (unverifiable); a
    pasted title opening is cut. Of several faults, the one that removes the sentence is named, else the first."""
    if broken_at_citation(sentence):
        return None, "broken_citation"
    if _author_year(sentence) and not find_citation_keys(sentence):
        return None, "author_year"
    text, removed = strip_copied_author_year(sentence)
    fault = "author_year" if removed else None
    if (stripped := strip_title_opening(text, titles)) is not None:
        text, fault = stripped, fault or "title_opening"
    return (None, "verbless") if lacks_main_verb(text) else (text, fault)


RUN_ON_WORDS = 70  # more words than this: fragments run together, not one sentence (a human one rarely has 60)
# words of a phrase that a sentence says twice (five would catch a parallel contrast: "they identify outlier dimensions
# by examining abnormal outputs, while we find outlier dimensions by examining abnormal updates")
RUN_ON_REPEAT = 6


def run_on(sentence: str) -> bool:
    """Note fragments run together instead of a sentence: a phrase of :data:`RUN_ON_REPEAT` words said twice, or
    more than :data:`RUN_ON_WORDS` words. The 0.5B wrote, as BERT's sentence: "BERT pretraining a Transformer encoder
    that conditions on both left and right context in every layer to make this possible To make this possible, the
    model is trained to recover randomly masked tokens … BERT pretraining a Transformer encoder …"."""
    words = re.findall(r"[a-z0-9]+", _KEY_GROUP.sub(" ", sentence).lower())
    grams = [tuple(words[i:i + RUN_ON_REPEAT]) for i in range(len(words) - RUN_ON_REPEAT + 1)]
    return len(words) > RUN_ON_WORDS or len(grams) != len(set(grams))

