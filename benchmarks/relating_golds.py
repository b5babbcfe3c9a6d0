"""The relating measures (crewlib.eval.relating) on human-written related-work sections: what a real section scores.

    python benchmarks/relating_golds.py --rwsgprv rwsgprv.jsonl --hoang-kan hoangkan.jsonl \\
        --strogens strogens_outputs.jsonl --sample

Sets (each optional; paths have no default):

- ``--rwsgprv``: jsonl of ``id, title, abstract, introduction, related_work, cited[{title, authors, year,
  abstract}]`` (RWSG-PRV). The paper's text is its abstract and introduction; author–year citations are mapped to
  the cited works by first-author surname and year (the year's letter dropped), and the share mapped is reported.
  ``--no-introduction``: the paper's text is its abstract alone, as the output checks know a target.
- ``--hoang-kan``: jsonl of ``id, related_work, cited[{idx, title, abstract}]`` (Hoang & Kan's RWSData, lowercased).
  The paper has no title or abstract here, so positioning is undefined; the cited works carry no authors or years,
  so no citation maps to a work: synthesis is judged on its words alone and theme coherence is undefined.
- ``--strogens``: jsonl of ``id, gold_related_work, system_outputs{...}`` (STRoGeNS). No paper text and no works'
  texts: positioning_any and synthesis (without support), on the gold and on each system's output.
- ``--sample``: the bundled sample corpus's gold sections (``crewlib.config.load_params("quick")``), with their
  titles, abstracts and references' texts.

``--works-text``: ``title+abstract`` (a work without an abstract known by its title alone, as the output checks
know it) or ``abstract`` (a work without an abstract unknown: its sentences judged on their words alone).
For each set: mean and min of each measure over the sections where it is defined (``n``: how many).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict

from crewlib.citations import citation_groups
from crewlib.config import load_params
from crewlib.eval.gold_keys import citation_surname as surname  # the first author's surname as citations name it
from crewlib.eval.gold_keys import fold_name
from crewlib.eval.real_sets import read_hoang_kan, read_rwsgprv, read_strogens
from crewlib.eval.relating import MEASURES, relating_scores

UNIT = load_params("quick").eval.paragraph_sentences  # a reading unit's sentences (the relating measures' unit)

__all__ = ["map_works", "surname", "work_text"]  # benchmarks/quality.py imports them from here


def map_works(text: str, cited: list[tuple[str, int | None, str]]) -> tuple[dict[str, str], int, int]:
    """``works_text`` for the author–year citations of ``text`` — each name ("smith 2018a") → the joined texts of the
    cited works by that first-author surname and year (``cited``: (surname, year, text)); and (mapped, total)
    mentions, repeats counted."""
    by_key: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, year, work_text in cited:
        if name and year:
            by_key[(name, str(year))].append(work_text)
    mapping, mapped, total = {}, 0, 0
    for group in citation_groups(text):
        for work in group:
            total += 1
            name, _, year = work.rpartition(" ")
            texts = by_key.get((name, year[:4]))
            if texts:
                mapped += 1
                if joined := " ".join(t for t in texts if t):
                    mapping[work] = joined
    return mapping, mapped, total


def work_text(title: str, abstract: str, mode: str) -> str:
    if mode == "abstract":
        return f"{title}. {abstract}" if abstract.strip() else ""
    return f"{title}. {abstract}".strip(" .")


def report(name: str, rows: list[dict[str, float | None]], extra: str = "") -> None:
    print(f"\n== {name}: {len(rows)} sections{extra}")
    print(f"{'measure':<22}{'n':>4}{'mean':>9}{'min':>9}{'max':>9}")
    for measure in MEASURES:
        values = [r[measure] for r in rows if r.get(measure) is not None]
        if values:
            print(f"{measure:<22}{len(values):>4}{statistics.mean(values):>9.3f}{min(values):>9.3f}{max(values):>9.3f}")
        else:
            print(f"{measure:<22}{0:>4}{'—':>9}{'—':>9}{'—':>9}")


def rwsgprv(path: str, threshold: float, mode: str, verbose: bool, introduction: bool = True) -> None:
    rows, mapped, total = [], 0, 0
    for example in read_rwsgprv(path):
        cited = [(fold_name(r.surname), r.year, work_text(r.title, r.abstract, mode)) for r in example.references]
        works, m, t = map_works(example.gold, cited)
        mapped, total = mapped + m, total + t
        paper = example.target_abstract + (f"\n\n{example.target_introduction}" if introduction else "")
        scores = relating_scores(example.gold, example.target_title, paper, works, threshold, UNIT)
        rows.append(scores)
        if verbose:
            print(example.example_id, {k: None if v is None else round(v, 3) for k, v in scores.items()},
                  f"mapped {m}/{t}")
    report(f"RWSG-PRV ({path}; works' text: {mode}; paper's text: abstract{' and introduction' * introduction})", rows,
           f"; citations mapped to a cited work: {mapped}/{total} = {mapped / max(total, 1):.3f}")


def hoang_kan(path: str, threshold: float, verbose: bool) -> None:
    rows = []
    for example in read_hoang_kan(path):
        scores = relating_scores(example.gold, "", "", None, threshold, UNIT)
        rows.append(scores)
        if verbose:
            print(example.example_id, {k: None if v is None else round(v, 3) for k, v in scores.items()})
    report(f"Hoang & Kan RWSData ({path})", rows)


def strogens(path: str, threshold: float) -> None:
    examples, outputs = read_strogens(path)
    texts: dict[str, list[str]] = {"gold": [e.gold for e in examples]}
    for system, by_paper in outputs.items():
        texts[system] = [by_paper[e.example_id] for e in examples if e.example_id in by_paper]
    for system, sections in texts.items():
        report(f"STRoGeNS {system} ({path}; no paper or works' text)",
               [relating_scores(t, "", "", None, threshold, UNIT) for t in sections])


def sample(threshold: float, mode: str, verbose: bool) -> None:
    from crewlib.tasks import build_tasks

    params = load_params("quick")
    rows, mapped, total = [], 0, 0
    for example in build_tasks(params).examples.values():
        if not example.gold_related_work.strip():
            continue
        cited = [(surname(r.authors[0]) if r.authors else "", r.year, work_text(r.title, r.abstract, mode))
                 for r in example.references]
        works, m, t = map_works(example.gold_related_work, cited)
        mapped, total = mapped + m, total + t
        scores = relating_scores(example.gold_related_work, example.title, example.abstract, works, threshold, UNIT)
        rows.append(scores)
        if verbose:
            print(example.target_id, {k: None if v is None else round(v, 3) for k, v in scores.items()},
                  f"mapped {m}/{t}")
    report(f"bundled sample golds (works' text: {mode})", rows,
           f"; citations mapped to a cited work: {mapped}/{total} = {mapped / max(total, 1):.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rwsgprv", help="RWSG-PRV jsonl")
    parser.add_argument("--hoang-kan", help="Hoang & Kan RWSData jsonl")
    parser.add_argument("--strogens", help="STRoGeNS outputs jsonl")
    parser.add_argument("--sample", action="store_true", help="the bundled sample corpus's golds")
    parser.add_argument("--threshold", type=float, default=None,
                        help="lexical support threshold (default: the quick params' output.support_threshold)")
    parser.add_argument("--works-text", choices=("title+abstract", "abstract"), default="title+abstract")
    parser.add_argument("--no-introduction", action="store_true",
                        help="RWSG-PRV: the paper's text is its abstract alone (as the output checks know a target)")
    parser.add_argument("--verbose", action="store_true", help="one line per section")
    args = parser.parse_args(argv)
    if not (args.rwsgprv or args.hoang_kan or args.strogens or args.sample):
        parser.error("name at least one set: --rwsgprv, --hoang-kan, --strogens or --sample")
    threshold = args.threshold
    if threshold is None:
        threshold = load_params("quick").output.support_threshold
    print(f"support threshold {threshold}")
    if args.rwsgprv:
        rwsgprv(args.rwsgprv, threshold, args.works_text, args.verbose, not args.no_introduction)
    if args.hoang_kan:
        hoang_kan(args.hoang_kan, threshold, args.verbose)
    if args.strogens:
        strogens(args.strogens, threshold)
    if args.sample:
        sample(threshold, args.works_text, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
