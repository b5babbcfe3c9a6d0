"""How often the sentence-form checks (:mod:`crewlib.sentence_form`) flag sentences people wrote.

Usage: python benchmarks/sentence_form_false_positives.py FILE.jsonl [FILE.jsonl ...] [--systems] [--show N]
       [--keep-gaps]

Each FILE is a JSON-lines file of papers whose human-written related-work section is the field
``related_work`` or ``gold_related_work``; a paper's ``cited`` list, where there is one, gives the pool titles
the title-opening check compares with. Human citations are first written the way the systems write them,
as keys: ``[3]`` → ``[R3]``, ``(Smith et al., 2020; Doe, 2021)`` → ``[R1, R2]``, ``Smith et al. (2020)`` →
``Smith et al. [R1]`` (lower-cased ``(smith and lee 2001)`` too), so that a flag is the check's error, not the
citation style's; where a data set dropped a citation it could not match and left a gap ("Later,  proposed",
"JPC79 , BFD"), the gap becomes ``[R0]`` (``--keep-gaps`` leaves it). Heading lines (no closing punctuation,
at most 12 words) are left out. Every sentence goes through each predicate and
:func:`~crewlib.sentence_form.repair_form`; the script prints, per file, how many sentences each flags and the
flagged sentences. ``--systems`` does the same for the ``system_outputs`` of a file that has them (machine
text: what the checks catch, not false positives).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from collections import Counter

from crewlib.citations import KEY
from crewlib.sentence_form import (
    broken_at_citation,
    lacks_main_verb,
    repair_form,
    strip_copied_author_year,
    strip_title_opening,
)
from crewlib.text import sentences, strip_markers

_NUMERIC = re.compile(r"\[(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\]")
_YEAR = r"(?:19|20)\d{2}[a-z]?"
_ITEM = re.compile(rf"^\s*(?:e\.g\.,?|see|cf\.)?\s*[A-Za-z][^;()]*?,?\s*{_YEAR}(?:,\s*[a-z])*\s*$")
_PARENTHETICAL = re.compile(r"\(([^()]*\d{4}[a-z]?)\)")
_NARRATIVE = re.compile(rf"\b((?:[A-Z][\w'\-]+)(?:\s+et\s+al\.?|\s+(?:and|&)\s+[A-Z][\w'\-]+)?)\s+\({_YEAR}"
                        r"[^()]{0,20}\)")
_ADJACENT_KEYS = re.compile(rf"\[({KEY}(?:, {KEY})*)\]\s*[;,]?\s*\[({KEY}(?:, {KEY})*)\]")
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|et al_?|etc|cf|vs|fig|eq|sec|mrs?|ms|dr)\.", re.IGNORECASE)
# Where a data set dropped a citation it could not match, it left a gap: "Later,  proposed", "JPC79 , BFD"
# (a space before a stop or comma only in a cased text: the lower-cased one is tokenized, "a , b").
_GAP = re.compile(r"(?<=[\w,;&)\]])  +(?=[\w\[(])")
_CASED_GAP = re.compile(r"(?<=\w) (?=[,.;]\s)|(?<=[(;]) ?(?=[;)])")
CHECKS = ("broken_citation", "verbless", "author_year", "title_opening")


def as_keys(text: str, gaps: bool = True) -> str:
    """The section with its human citations written as keys ``[R1]``, numbered in order of appearance, and
    (``gaps``) each gap where the data set dropped a citation as ``[R0]``."""
    counter = itertools.count(1)
    if gaps:
        text = _GAP.sub(" [R0] ", text)
        text = _CASED_GAP.sub(" [R0] ", text) if text.lower() != text else text
    text = _NUMERIC.sub(lambda m: "[" + ", ".join(f"R{n}" for n in re.findall(r"\d+", m.group(1))) + "]", text)

    def parenthetical(match: re.Match) -> str:
        items = match.group(1).split(";")
        if not all(_ITEM.match(item) for item in items):
            return match.group(0)
        return "[" + ", ".join(f"R{next(counter)}" for _ in items) + "]"

    text = _PARENTHETICAL.sub(parenthetical, text)
    text = _NARRATIVE.sub(lambda m: f"{m.group(1)} [R{next(counter)}]", text)
    while (merged := _ADJACENT_KEYS.sub(r"[\1, \2]", text)) != text:
        text = merged
    return text


def split_sentences(text: str) -> list[str]:
    """Sentences of each line; a lower-cased text (Hoang & Kan) is split at every full stop but abbreviations'."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or (not re.search(r"[.!?:][\"')\]*_]*$", line) and len(line.split()) <= 12):
            continue  # a heading
        protected = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\0"), line)
        cased = strip_markers(line).lower() != strip_markers(line)
        parts = sentences(protected) if cased else re.split(r"(?<=[.!?])\s+", protected)
        out += [s.replace("\0", ".").strip() for s in parts if s.strip()]
    return out


def flags(sentence: str, titles: list[str]) -> dict[str, bool]:
    return {
        "broken_citation": broken_at_citation(sentence),
        "verbless": lacks_main_verb(sentence),
        "author_year": strip_copied_author_year(sentence)[1] > 0,
        "title_opening": strip_title_opening(sentence, titles) is not None,
    }


def measure(name: str, sections: list[tuple[str, list[str]]], show: int, gaps: bool = True) -> None:
    counts: Counter[str] = Counter()
    flagged: dict[str, list[str]] = {check: [] for check in (*CHECKS, "repair_form")}
    total = 0
    for text, titles in sections:
        for sentence in split_sentences(as_keys(text, gaps)):
            total += 1
            for check, hit in flags(sentence, titles).items():
                if hit:
                    counts[check] += 1
                    flagged[check].append(sentence)
            repaired, fault = repair_form(sentence, titles)
            if fault:
                counts["repair_form"] += 1
                flagged["repair_form"].append(f"[{fault}] {sentence}\n      -> {repaired}")
    titled = sum(bool(titles) for _, titles in sections)
    print(f"\n== {name}: {len(sections)} sections ({titled} with pool titles), {total} sentences")
    for check in flagged:
        print(f"  {check:16s} {counts[check]:4d} flagged ({counts[check] / max(total, 1):.2%})")
    for check, hits in flagged.items():
        for sentence in hits[:show]:
            print(f"    {check}: {sentence}")
        if len(hits) > show:
            print(f"    {check}: ... {len(hits) - show} more")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--systems", action="store_true", help="also the system outputs of a file that has them")
    parser.add_argument("--show", type=int, default=50, help="flagged sentences printed per check")
    parser.add_argument("--keep-gaps", action="store_true", help="leave the gaps of dropped citations as they are")
    args = parser.parse_args()
    for path in args.files:
        with open(path, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        human = []
        for record in records:
            text = record.get("related_work") or record.get("gold_related_work") or ""
            human.append((text, [c.get("title", "") for c in record.get("cited", []) if c.get("title")]))
        measure(f"{path} (human)", human, args.show, not args.keep_gaps)
        if args.systems:
            systems = sorted({k for r in records for k, v in (r.get("system_outputs") or {}).items() if v})
            for system in systems:
                texts = [(r["system_outputs"][system], []) for r in records if r["system_outputs"].get(system)]
                measure(f"{path} ({system})", texts, args.show, not args.keep_gaps)


if __name__ == "__main__":
    main()
