"""How much of three real sets' gold sections can be written in system keys (crewlib.eval.gold_keys).

    python benchmarks/gold_keys_real.py --hoang-kan hoangkan.jsonl --rwsgprv rwsgprv.jsonl \\
        --strogens strogens_outputs.jsonl [--show N] [--unresolved]

Each set is optional; paths have no default (the sets are not part of the project: ``crewlib.eval.real_sets`` reads
them). Per set: the papers, the cited works of the golds (repeats counted), how many stayed unresolved and their
share, and the citations (a parenthesis or adjacent ones, a narrative citation) with how many were left as written;
for Hoang & Kan also how many papers had their citation names aligned to the cited works, and how many name ties
(names sharing their first author's first word) the text around the citations decided — how many of those it put
out of year order, and how many it could not tell. ``--show N``: the first N papers' keyed sections of
Hoang & Kan and RWSG-PRV, each citation followed by the title of the work it resolved to, to check by eye.
``--unresolved``: every citation left as written, with its paper.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.eval import EvalExample  # noqa: E402
from crewlib.eval.gold_keys import keyed_gold_counts, resolve_citations  # noqa: E402
from crewlib.eval.real_sets import align_citation_names, read_hoang_kan, read_rwsgprv, read_strogens  # noqa: E402


def counts(name: str, examples: list[EvalExample], extra: str = "") -> None:
    """Cited works (repeats counted) and those unresolved; and citations (groups) and those left as written."""
    unresolved = total = groups = left = 0
    for example in examples:
        _, missing, cited = keyed_gold_counts(example)
        unresolved, total = unresolved + missing, total + cited
        found: dict[int, bool] = {}
        for piece, ids in resolve_citations(example):
            found[piece.group] = found.get(piece.group, False) or None in ids
        groups, left = groups + len(found), left + sum(found.values())
    share = unresolved / total if total else 0.0
    print(f"{name:<14} papers {len(examples):>4}  cited works {total:>5}  unresolved {unresolved:>4}  "
          f"share {share:.3f}  (citations {groups}, left as written {left}){extra}")


def alignment_note(examples: list[EvalExample]) -> str:
    found = [align_citation_names(e.gold, e.references) for e in examples]
    aligned = [a for a in found if a.aligned]
    ties = sum(a.tie_groups for a in aligned)
    return (f"\n{'':<14} names aligned to works in {len(aligned)}/{len(found)} papers; name ties {ties} "
            f"({sum(a.tie_names for a in aligned)} names) decided by the text around them: "
            f"{ties - sum(a.undecided for a in aligned)} ({sum(a.reordered for a in aligned)} out of year order), "
            f"{sum(a.undecided for a in aligned)} undecided (year order kept)"
            + "".join(f"\n{'':<14} not aligned: {a.reason}" for a in found if not a.aligned))


def show(examples: list[EvalExample], n: int) -> None:
    """Each citation of the first ``n`` golds with the titles of the works it resolved to."""
    for example in examples[:n]:
        titles = {r.ref_id: r.title for r in example.references}
        print(f"\n--- {example.example_id}: {example.target_title[:80]}")
        for piece, ids in resolve_citations(example):
            start = piece.names_start if piece.names_start >= 0 else piece.start
            context = example.gold[max(0, start - 90):start].replace("\n", " ")
            said = example.gold[start:piece.end]
            works = "; ".join(f"{w} → {titles[i][:70] if i else 'UNRESOLVED'}"
                              for w, i in zip(piece.works, ids, strict=True))
            print(f"  …{context} {said}\n      {works}")


def unresolved(examples: list[EvalExample]) -> None:
    for example in examples:
        for piece, ids in resolve_citations(example):
            if None in ids:
                start = piece.names_start if piece.names_start >= 0 else piece.start
                print(f"  {example.example_id}: {example.gold[start:piece.end]!r} "
                      f"{[w for w, i in zip(piece.works, ids, strict=True) if i is None]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hoang-kan", help="Hoang & Kan RWSData jsonl")
    parser.add_argument("--rwsgprv", help="RWSG-PRV jsonl")
    parser.add_argument("--strogens", help="STRoGeNS outputs jsonl")
    parser.add_argument("--show", type=int, default=0, help="print the first N keyed golds of Hoang & Kan, RWSG-PRV")
    parser.add_argument("--unresolved", action="store_true", help="print every citation left as written")
    args = parser.parse_args(argv)
    if not (args.hoang_kan or args.rwsgprv or args.strogens):
        parser.error("name at least one set: --hoang-kan, --rwsgprv or --strogens")
    sets = []
    if args.hoang_kan:
        examples = read_hoang_kan(args.hoang_kan)
        counts("Hoang & Kan", examples, alignment_note(examples))
        sets.append(examples)
    if args.rwsgprv:
        examples = read_rwsgprv(args.rwsgprv)
        counts("RWSG-PRV", examples)
        sets.append(examples)
    if args.strogens:
        examples, outputs = read_strogens(args.strogens)
        counts("STRoGeNS", examples, f"  (systems: {', '.join(f'{s} {len(t)}' for s, t in outputs.items())})")
        if args.unresolved:
            sets.append(examples)
    for examples in sets:
        if args.unresolved:
            unresolved(examples)
        if args.show and examples and examples[0].citation_style == "R":
            show(examples, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
