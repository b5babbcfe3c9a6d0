"""Can an instrument tell good from bad? The gold section against controlled damages of it.

For each paper of a discrimination set (``instrument.papers``, one or more of: every paper of the data with a gold
section, the evaluation targets only, the held-out papers written after the instrument's design) the gold
related-work section is scored together with damaged copies of it; an instrument that discriminates ranks the gold
above each copy. ``instrument_discrimination`` reports, per judge, instrument (the absolute judge's dimensions, the
pairwise judge, each grounded measure of :mod:`crewlib.eval.instrument` and the composite) and damage, the share of
(gold, damaged) pairs ranked correctly (gold strictly better) and the share of ties.

The gold is first written with the keys a system writes (``keyed_gold``, :mod:`crewlib.eval.gold_keys`: its
author–year citations, parenthetical and narrative, as ``[R3]`` markers), so that every instrument sees the gold and a
system's section in the same form. The damages
(``degrade``), each a thing a reviewer rejects:

- ``paragraph_repeated`` — the first paragraph appended again at the end;
- ``citations_removed`` — every citation (``[R3]`` markers and author–year parentheses) deleted;
- ``sentences_shuffled`` — all sentences in a random order (never the original one), as one paragraph;
- ``cut_mid_sentence`` — the text stops halfway, in the middle of a sentence;
- ``wrong_paper_paragraph`` — the last paragraph replaced by one from another paper's section;
- ``claims_swapped`` — two sentences citing different works trade their citations (each keeps its text);
- ``claim_altered`` — one cited sentence states what its cited work does not: a number changed, a finding turned
  around ("outperforms" → "underperforms"), or else a word its work's abstract uses replaced by one of another work;
- ``half_citations_dropped`` — the sentences about the second half of the cited works (in order of first citation)
  removed, and those works' keys removed from the sentences that cite others too;
- ``first_person_copies`` — up to two sentences each citing one work replaced by that work's abstract's opening
  sentence in its authors' first person ("We show that ...").

Five more (:mod:`crewlib.experiments.damages`) keep the section fluent and cited but undo what makes it a related-work
section rather than a list of works:

- ``works_listed`` — each paragraph one sentence listing the works it cites, nothing said of them ("Several
  approaches have been proposed [R1, R2, R3].");
- ``positioning_removed`` — every sentence on the target paper itself ("this paper", "our", "we", its short name)
  removed; roadmap sentences ("In this section, we review ...") stay;
- ``annotated_bibliography`` — per paragraph, one sentence per cited work: its abstract's opening sentence in the
  third person ("The authors propose ... [R3]."): no relation between works, none to the paper;
- ``themes_interleaved`` — the sentences dealt round-robin across the paragraphs, re-cut to the gold's paragraph
  sizes: each paragraph mixes themes;
- ``comparisons_removed`` — sentences comparing or contrasting works (two works cited or more, "unlike", "whereas",
  "outperforms" ...) removed, except those on the target paper (positioning).
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from crewlib.citations import KEY, KEY_GROUP, find_citation_keys, is_lowercased
from crewlib.eval import EvalExample, Evaluator
from crewlib.eval.gold_keys import keyed_gold, parenthetical_keyed_gold
from crewlib.eval.instrument import (
    MEASURES,
    SET,
    cross_fitted,
    instrument_settings,
    measured_groups,
    pairwise_table,
    position_consistency,
    rekey,
    verdicts,
)
from crewlib.eval.llm_metrics import Judge
from crewlib.eval.relating import split_sentences
from crewlib.experiments import damages
from crewlib.experiments.damages import DAMAGES
from crewlib.schema import Params
from crewlib.sections import paragraphs
from crewlib.text import content_words, numbers, sentences, strip_markers, tokens

LEGACY_DAMAGES = ("paragraph_repeated", "citations_removed", "sentences_shuffled", "cut_mid_sentence",
                  "wrong_paper_paragraph")  # the first five damages (degraded_outputs' default)
DEGRADATIONS = (*LEGACY_DAMAGES, "claims_swapped", "claim_altered", "half_citations_dropped", "first_person_copies",
                *DAMAGES)
GOLD = "gold"
_YEAR_PARENTHESES = re.compile(r"[ \t]*\([^()]*\b(?:19|20)\d{2}[a-z]?\b[^()]*\)")  # (Smith et al., 2020; Doe 2019)
_LOWERED_KEY = re.compile(r"\[r\d+\]")
_KEY_GROUP = re.compile(rf"\s*{KEY_GROUP}")
# Findings turned around: a word of a result and its opposite (both directions).
_OPPOSITES = dict(pair for a, b in [
    ("outperforms", "underperforms"), ("outperform", "underperform"), ("improves", "degrades"),
    ("improve", "degrade"), ("improved", "degraded"), ("improvements", "losses"), ("increases", "decreases"),
    ("increase", "decrease"), ("higher", "lower"), ("better", "worse"), ("faster", "slower"),
    ("larger", "smaller"), ("more", "fewer"), ("stronger", "weaker"), ("strong", "weak"), ("reduces", "raises"),
    ("effective", "ineffective"), ("supervised", "unsupervised"), ("long", "short"), ("many", "few"),
] for pair in ((a, b), (b, a)))
_OPENING = re.compile(r"^(?:This|The present) (?:paper|work|study|article)\b|^The authors\b|^We\b")


def _keys(text: str) -> list[str]:
    """The distinct keys ``text`` cites, in order."""
    return list(dict.fromkeys(find_citation_keys(text)))


def _without_keys(sentence: str, dropped: set[str]) -> str:
    """``sentence`` with the keys of ``dropped`` removed from its citations, in place."""
    def keep(match: re.Match) -> str:
        keys = [k for k in re.findall(KEY, match.group(0)) if k not in dropped]
        return f" [{', '.join(keys)}]" if keys else ""

    return re.sub(r"\s+([.,;:])", r"\1", _KEY_GROUP.sub(keep, sentence))


def _swap_claims(grid: list[list[str]]) -> str:
    """Two citations of one work each, in different sentences (in different paragraphs when there are), trade
    places: the first such citation and the first later one whose work neither sentence cites already."""
    groups = [(i, j, m) for i, p in enumerate(grid) for j, s in enumerate(p) for m in _KEY_GROUP.finditer(s)
              if len(_keys(m.group(0))) == 1]
    for n, (i, j, first) in enumerate(groups):
        key = _keys(first.group(0))[0]
        later = [(k, m, g) for k, m, g in groups[n + 1:] if (k, m) != (i, j) and _keys(g.group(0))[0] not in
                 _keys(grid[i][j]) and key not in _keys(grid[k][m])]
        later.sort(key=lambda g: g[0] == i)  # another paragraph first
        if later:
            k, m, second = later[0]
            other = _keys(second.group(0))[0]
            a, b = grid[i][j], grid[k][m]
            grid[i][j] = a[:first.start()] + f" [{other}]" + a[first.end():]
            grid[k][m] = b[:second.start()] + f" [{key}]" + b[second.end():]
            return _join(grid)
    raise ValueError("no two sentences cite different works: there are no claims to swap")


def _first_person_copies(grid: list[list[str]], cited: list[tuple[int, int, list[str]]],
                         sources: Mapping[str, str]) -> str:
    """Up to two first-person copies of cited works' abstracts: each replaces a sentence that cites only that
    work, or, where fewer such sentences exist, follows the first sentence citing the work."""
    singles = [(i, j, keys[0]) for i, j, keys in cited if len(keys) == 1 and sentences(sources.get(keys[0], ""))]
    copies = {(i, j): (key, "replace") for i, j, key in singles[:2]}
    for i, j, keys in cited:
        if len(copies) == 2:
            break
        key = next((k for k in keys if sentences(sources.get(k, "")) and k not in {c[0] for c in copies.values()}),
                   None)
        if key is not None and (i, j) not in copies:
            copies[(i, j)] = (key, "insert")
    if not copies:
        raise ValueError("no cited work has an abstract: there is nothing to copy")
    lower = all(is_lowercased(s) for p in grid for s in p)
    for (i, j), (key, how) in copies.items():
        copy = f"{_first_person(damages.opening_sentence(sources[key])).rstrip('.')} [{key}]."
        copy = _LOWERED_KEY.sub(lambda m: m.group(0).upper(), copy.lower()) if lower else copy  # the gold's case
        grid[i][j] = copy if how == "replace" else f"{grid[i][j]} {copy}"
    return _join(grid)


def _split(paragraph: str) -> list[str]:
    """A paragraph's sentences: :func:`crewlib.text.sentences`, as the recorded damages were cut; a lowercased
    section (RWSData's) by :func:`crewlib.eval.relating.split_sentences`, which finds its stops."""
    return split_sentences(paragraph) if is_lowercased(paragraph) else sentences(paragraph)


def _sentence_map(text: str) -> list[list[str]]:
    return [_split(p) for p in paragraphs(text)]


def _join(parts: list[list[str]]) -> str:
    return "\n\n".join(" ".join(p) for p in parts if p)


def _cited(parts: list[list[str]]) -> list[tuple[int, int, list[str]]]:
    return [(i, j, _keys(s)) for i, p in enumerate(parts) for j, s in enumerate(p) if _keys(s)]


def _alter(sentence: str, evidence: str, other: str, step: str) -> str | None:
    """``sentence`` saying what ``evidence`` does not where the two agreed, or None. ``step``: ``number`` (a number
    both state changed), ``finding`` (a finding word both use turned around) or ``word`` (a word ``evidence`` uses
    replaced by one of ``other``, another work's abstract). The change is never inside a citation or a name."""
    if step == "number":
        stated = {m.group(1) for m in numbers(evidence)}
        for match in numbers(sentence):
            number = match.group(1)
            if number in stated:
                value = float(number)
                changed = (f"{value * 2 + 1:.{len(number.split('.')[1])}f}" if "." in number
                           else str(int(value) * 2 + 3))
                return sentence[:match.start(1)] + changed + sentence[match.end(1):]
        return None
    if step == "finding":
        used = set(tokens(evidence))
        for match in re.finditer(r"\b[a-z]+\b", sentence):
            opposite = _OPPOSITES.get(match.group(0))
            if opposite and match.group(0) in used and opposite not in used:
                return sentence[:match.start()] + opposite + sentence[match.end():]
        return None
    shared = [w for w in re.findall(r"[A-Za-z]{5,}", strip_markers(sentence))
              if w.lower() in content_words(evidence) and w[0].islower()]
    foreign = sorted(content_words(other) - content_words(evidence) - content_words(sentence),
                     key=lambda w: (-len(w), w))
    if not shared or not foreign:
        return None
    word = max(shared, key=len)
    return re.sub(rf"\b{word}\b", foreign[0], sentence, count=1)


def _first_person(opening: str) -> str:
    """An abstract's opening sentence as its authors would write it: "This paper proposes X" → "We propose X"."""
    opening = opening.strip()
    if _OPENING.match(opening):
        rest = _OPENING.sub("", opening, count=1).strip()
        if re.match(r"(?:is|has)\b", rest):
            return f"Our work {rest}"
        verb, _, tail = rest.partition(" ")
        if verb.endswith(("sses", "ches", "shes", "xes")):
            verb = verb[:-2]
        elif verb.endswith("ies"):
            verb = verb[:-3] + "y"
        elif verb.endswith("s") and not verb.endswith("ss"):
            verb = verb[:-1]
        return f"We {verb} {tail}".strip()
    first = opening[:1].lower() + opening[1:] if opening[1:2].islower() else opening
    return f"We show that {first}"


def degrade(gold: str, kind: str, *, other: str, seed: int = 0, sources: Mapping[str, str] | None = None,
            title: str = "") -> str:
    """``gold`` damaged one way (``DEGRADATIONS``); ``other``: another paper's gold section; ``sources``: key → the
    cited work's abstract (``claim_altered``, ``first_person_copies``, ``annotated_bibliography``); ``title``: the
    target paper's (its short name speaks of the paper: ``positioning_removed``, ``comparisons_removed``). A damage
    the text does not allow (no two sentences citing different works to swap ...) is a ValueError saying so."""
    parts = paragraphs(gold)
    if not parts:
        raise ValueError("the gold section is empty: nothing to degrade")
    sources = sources or {}
    if kind in DAMAGES:
        return damages.damage(gold, kind, title=title, sources=sources)
    if kind == "paragraph_repeated":
        return "\n\n".join([*parts, parts[0]])
    if kind == "citations_removed":
        text = _YEAR_PARENTHESES.sub("", strip_markers(gold))
        return re.sub(r"[ \t]+([.,;:])", r"\1", text)
    if kind == "sentences_shuffled":
        return _shuffle_sentences(parts, seed)
    if kind == "cut_mid_sentence":
        words = gold.split(" ")
        cut = " ".join(words[: max(1, len(words) // 2)]).rstrip()
        return cut.rstrip(".!?") if cut[-1:] in ".!?" else cut
    if kind == "wrong_paper_paragraph":
        foreign = paragraphs(other)
        if not foreign:
            raise ValueError("the other paper's gold section is empty")
        return "\n\n".join([*parts[:-1], foreign[0]] if len(parts) > 1 else [parts[0], foreign[0]])
    grid = _sentence_map(gold)
    cited = _cited(grid)
    if kind == "claims_swapped":
        return _swap_claims(grid)
    if kind == "claim_altered":
        return _alter_one_claim(grid, cited, sources)
    if kind == "half_citations_dropped":
        return _drop_half_citations(grid, cited)
    if kind == "first_person_copies":
        return _first_person_copies(grid, cited, sources)
    raise ValueError(f"unknown degradation {kind!r}; known: {DEGRADATIONS}")


def _shuffle_sentences(parts: Sequence[str], seed: int) -> str:
    """Every sentence of the section in a seeded random order (rotated when the shuffle changed nothing)."""
    ordered = [s for p in parts for s in _split(p)]
    if len(ordered) < 2:
        raise ValueError("the gold section has one sentence: there is no order to shuffle")
    shuffled = list(ordered)
    random.Random(seed).shuffle(shuffled)
    if shuffled == ordered:  # a shuffle may leave the order as it was: rotate instead
        shuffled = ordered[1:] + ordered[:1]
    return " ".join(shuffled)


def _alter_one_claim(grid: list[list[str]], cited, sources: Mapping[str, str]) -> str:
    """The first cited sentence whose number, else finding, else word of its cited work can be changed, changed."""
    for step in ("number", "finding", "word"):
        for i, j, keys in cited:
            evidence = " ".join(sources.get(k, "") for k in keys)
            foreign = " ".join(v for k, v in sources.items() if k not in keys)
            altered = _alter(grid[i][j], evidence, foreign, step) if evidence.strip() else None
            if altered and altered != grid[i][j]:
                grid[i][j] = altered
                return _join(grid)
    raise ValueError("no cited sentence could be altered (no number, no finding, no word of its work)")


def _drop_half_citations(grid: list[list[str]], cited) -> str:
    """The later-cited half of the works removed: their markers, and sentences that cite only them."""
    order = list(dict.fromkeys(k for _, _, keys in cited for k in keys))
    if len(order) < 2:
        raise ValueError("the gold cites fewer than two works: there is no half to drop")
    dropped = set(order[(len(order) + 1) // 2:])
    out = []
    for paragraph in grid:
        kept = []
        for sentence in paragraph:
            keys = _keys(sentence)
            if keys and set(keys) <= dropped:
                continue
            kept.append(_without_keys(sentence, dropped))
        out.append(kept)
    return _join(out)


def degraded_outputs(examples: Sequence[EvalExample], *, kinds: Sequence[str] = LEGACY_DAMAGES, seed: int = 0,
                     keyed: bool = False, keying: str = "all_forms") -> pd.DataFrame:
    """Rows ``system, example, text, key_to_id`` for the evaluation suite: each gold and its damages.

    ``keyed``: the gold in the keys a system writes (``keying``: ``all_forms``, :func:`keyed_gold`, or version 3's
    ``parenthetical``, :func:`crewlib.eval.gold_keys.parenthetical_keyed_gold`, for recorded answers). A damage a
    gold does not allow is left out and listed in ``attrs["skipped"]`` (example, damage, reason), never silently.
    """
    usable = [e for e in examples if e.gold.strip()]
    if len(usable) < 2:
        raise ValueError("judge discrimination needs at least two examples with a gold section "
                         "(a wrong-paper paragraph comes from another example)")
    unknown = [k for k in kinds if k not in DEGRADATIONS]
    if unknown:
        raise ValueError(f"unknown degradations {unknown}; known: {DEGRADATIONS}")
    key = {"all_forms": keyed_gold, "parenthetical": parenthetical_keyed_gold}[keying]
    golds = {e.example_id: key(e)[0] if keyed else e.gold for e in usable}
    rows, skipped = [], []
    for i, example in enumerate(usable):
        gold, other = golds[example.example_id], golds[usable[(i + 1) % len(usable)].example_id]
        refs = example.reference_by_id
        sources = {k: refs[rid].abstract for k, rid in example.default_keys.items() if rid in refs}
        rows.append({"system": GOLD, "example": example.example_id, "text": gold,
                     "key_to_id": dict(example.default_keys)})
        for kind in kinds:
            try:
                text = degrade(gold, kind, other=other, seed=seed + i, sources=sources, title=example.target_title)
            except ValueError as exc:
                skipped.append({"example": example.example_id, "damage": kind, "reason": str(exc)})
                continue
            rows.append({"system": kind, "example": example.example_id, "text": text,
                         "key_to_id": dict(example.default_keys)})
    frame = pd.DataFrame(rows)
    frame.attrs["skipped"] = skipped
    return frame


@dataclass
class InstrumentCheck:
    """The discrimination test of every instrument: per judge, instrument and damage, the share of (gold,
    damaged) pairs ranked correctly and the share of ties (``table``); the raw scores, pairwise preferences and
    verdicts behind it; the pairwise judge's position consistency; the damages a gold did not allow."""

    table: pd.DataFrame
    scores: pd.DataFrame
    preferences: pd.DataFrame
    verdicts: pd.DataFrame
    consistency: pd.DataFrame
    skipped: list[dict]

    def summary(self) -> pd.DataFrame:
        """Per judge and instrument (and discrimination set, when several were measured): pairs, the share correct
        over every damage, and the worst damage's share (:func:`summary_of`)."""
        return summary_of(self.table)

    @classmethod
    def combine(cls, checks: Mapping[str, InstrumentCheck]) -> InstrumentCheck:
        """Checks of several discrimination sets (``instrument.papers``) as one, each row labelled by its set in a
        ``papers`` column (first)."""
        def stacked(name: str) -> pd.DataFrame:
            parts = [getattr(c, name).assign(**{SET: label}) for label, c in checks.items()]
            frame = pd.concat(parts, ignore_index=True)
            return frame[[SET, *(c for c in frame.columns if c != SET)]]

        return cls(*(stacked(n) for n in ("table", "scores", "preferences", "verdicts", "consistency")),
                   [{SET: label, **s} for label, c in checks.items() for s in c.skipped])


def summary_of(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge and instrument (and discrimination set, when several were measured) of a discrimination table:
    pairs, the share correct over every damage, and the worst damage's share."""
    t = table.assign(right=table.correct * table.pairs)
    keys = [k for k in (SET, "judge", "instrument") if k in t]
    out = t.groupby(keys, sort=False).agg(pairs=("pairs", "sum"), right=("right", "sum"), worst=("correct", "min"))
    out["correct"] = out.right / out.pairs
    return out.drop(columns="right").reset_index()[[*keys, "pairs", "correct", "worst"]]


def verdict_table(found: pd.DataFrame) -> pd.DataFrame:
    """``instrument, damage, pairs, correct, ties`` from verdicts of (gold, damaged) pairs; a pair without a
    verdict (a measure a side lacks, a missing judgement) is not counted."""
    rows = []
    for (instrument, damage), part in found.dropna(subset=["verdict"]).groupby(["instrument", "second"], sort=False):
        rows.append({"instrument": instrument, "damage": damage, "pairs": len(part),
                     "correct": float((part.verdict > 0).mean()), "ties": float((part.verdict == 0).mean())})
    return pd.DataFrame(rows, columns=["instrument", "damage", "pairs", "correct", "ties"])


def instrument_discrimination(params: Params, examples: Sequence[EvalExample], *, judges: Sequence[Judge] | None = None,
                              seed: int = 0, absolute: bool | Collection[str] = True,
                              progress: bool = False) -> InstrumentCheck:
    """Every instrument of ``instrument`` in the params on the gold sections of ``examples`` against their
    damages: the grounded measures, and per judge its absolute scores, its pairwise preferences and the composite.

    The measures always read the keyed gold (a citation they cannot resolve would count as none); the judges read
    it keyed too, unless ``instrument.keyed_gold`` is off (the recorded answers judged the author–year gold): then
    they read the same gold and damages with the author–year citations. ``absolute``: False leaves the absolute
    1–5 judge out (a call per dimension and text; the benchmark's cheaper run); a collection of example ids: the
    absolute judge on those papers' pairs only (``instrument.absolute_papers: evaluation``)."""
    settings = instrument_settings(params)
    measured = degraded_outputs(examples, kinds=settings.damages, seed=seed, keyed=True, keying=settings.gold_keys)
    outputs = measured if settings.keyed_gold else degraded_outputs(examples, kinds=settings.damages, seed=seed)
    judges = list(judges) if judges is not None else Evaluator(params).judges
    by_id = {e.example_id: e for e in examples}
    texts = {(r.example, r.system): rekey(r.text, r.key_to_id, by_id[r.example]) for r in outputs.itertuples()}
    pairs = [(r.example, GOLD, r.system) for r in outputs.itertuples() if r.system != GOLD]
    workers = int(params.eval.workers)
    tables, all_scores, all_prefs, all_verdicts = [], [], [], []
    for judge in judges:
        evaluator = Evaluator(params, judges=[judge])
        scores = evaluator.score(measured, examples, metrics=measured_groups(settings), progress=progress)
        if absolute:
            judged = outputs if absolute is True else outputs[outputs.example.isin(set(absolute))]
            scores = pd.concat([scores, evaluator.score(judged, examples, metrics=["judge"], progress=progress)])
        prefs = pairwise_table(judge, [(by_id[e], a, texts[(e, a)], b, texts[(e, b)]) for e, a, b in pairs],
                               settings.pairwise_dimensions, max_tokens=settings.max_tokens,
                               retries=int(params.eval.judge_retries), workers=workers)
        found = verdicts(scores, prefs, pairs, settings)
        names = [n for n in (*MEASURES, *(f"pairwise:{d}" for d in settings.pairwise_dimensions))
                 if found[found.instrument == n].delta.notna().any()]
        if len({e for e, _, _ in pairs}) >= 2 and names:
            found = pd.concat([found, cross_fitted(found, names)], ignore_index=True)
        tables.append(verdict_table(found).assign(judge=judge.name))
        all_scores.append(scores.assign(judge=judge.name))
        all_prefs.append(prefs)
        all_verdicts.append(found.assign(judge=judge.name))
    prefs = pd.concat(all_prefs, ignore_index=True)
    return InstrumentCheck(pd.concat(tables, ignore_index=True), pd.concat(all_scores, ignore_index=True), prefs,
                           pd.concat(all_verdicts, ignore_index=True), position_consistency(prefs),
                           measured.attrs["skipped"] + [s for s in outputs.attrs["skipped"] if outputs is not measured])
