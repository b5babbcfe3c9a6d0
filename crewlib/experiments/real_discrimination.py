"""The instrument held to real related-work sections that no one here wrote (issue 46; docs/method.md, "Version 4").

Three public sets of human-written sections, read from files the user names (``crewlib.eval.real_sets``; the
project ships none of them), each measured apart:

- **Hoang & Kan** (RWSData): lowercased ACL sections, the cited works' titles and abstracts, no paper text;
- **RWSG-PRV**: recent NLP and vision papers with their title, abstract, introduction and cited works (an abstract
  only where its licence allows);
- **STRoGeNS**: arXiv sections with numbered citations and four systems' outputs, no text of the works or the
  paper: only the measures that need none (``citation_recall``, coherence, paragraphing, the rates, a cut end,
  positioning_any, synthesis on its words, citation_content); measured in two halves (:func:`halves`): the papers
  version 5 was designed on, and those held out from its design.

Two checks, on the composite without the LLM (the instrument's offline part; the judges' parts need answers no one
recorded for these papers):

- :func:`real_discrimination` — each gold (in keys, :func:`crewlib.eval.gold_keys.keyed_gold_counts`: every
  citation form, the unresolved share reported) against its damages (all of
  :data:`crewlib.experiments.discrimination.DEGRADATIONS`, the five of version 4 included): the share of pairs the
  gold is ranked first;
- :func:`gold_against_systems` — each gold against each system's section of the same paper (STRoGeNS's four
  shipped outputs; ``crew write``'s where it was run): the share the human section is ranked first.

``python -m crewlib.experiments.real_discrimination --hoang-kan F --rwsgprv F --strogens F [--ours DIR]`` writes
``figures/05_judge_discrimination_real.csv``, ``figures/05_gold_vs_systems.csv`` and ``figures/05_real_sets.csv``
(per set: papers, the golds' citations and the share left unresolved); notebook 05 shows them beside
the sample's measurement.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import pandas as pd

from crewlib.config import load_params, resolve_path
from crewlib.eval import EvalExample, Evaluator
from crewlib.eval.gold_keys import keyed_gold_counts
from crewlib.eval.instrument import (
    COMPOSITE,
    OFFLINE_COMPOSITE,
    SET,
    instrument_settings,
    measured_groups,
    verdicts,
)
from crewlib.eval.real_sets import read_hoang_kan, read_rwsgprv, read_strogens
from crewlib.experiments.discrimination import DEGRADATIONS, GOLD, degraded_outputs, verdict_table
from crewlib.schema import Params

JUDGE = "none (composite without the LLM)"
SET_NAMES = {"hoang_kan": "real: Hoang & Kan", "rwsgprv": "real: RWSG-PRV", "strogens": "real: STRoGeNS, design half"}
T = TypeVar("T")
HELD_OUT = "real: STRoGeNS, held out"  # the papers at odd positions of the file: never read to design version 5
DISCRIMINATION_FILE = "05_judge_discrimination_real.csv"
SYSTEMS_FILE = "05_gold_vs_systems.csv"
SETS_FILE = "05_real_sets.csv"  # per set: papers, the golds' citations, and the share left unresolved


def _score(params: Params, rows: pd.DataFrame | Sequence[Mapping], examples: Sequence[EvalExample]) -> pd.DataFrame:
    groups = measured_groups(instrument_settings(params), llm=False)  # no judge: the composite without the LLM
    return Evaluator(params, judges=[]).score(rows, examples, metrics=groups, progress=False)


def real_discrimination(params: Params, label: str, examples: Sequence[EvalExample], *,
                        kinds: Sequence[str] = DEGRADATIONS, seed: int = 0) -> tuple[pd.DataFrame, list[dict]]:
    """Rows ``papers, instrument, damage, pairs, correct, ties, judge`` of every measure and the composite without
    the LLM on ``examples``' golds against their damages; and the damages a gold did not allow."""
    outputs = degraded_outputs(examples, kinds=kinds, seed=seed, keyed=True)
    scores = _score(params, outputs, examples)
    pairs = [(r.example, GOLD, r.system) for r in outputs.itertuples() if r.system != GOLD]
    found = verdicts(scores, None, pairs, instrument_settings(params))
    table = verdict_table(found[found.instrument != COMPOSITE]).assign(judge=JUDGE)  # no judge: the offline one only
    table.insert(0, SET, label)
    return table, [{SET: label, **s} for s in outputs.attrs["skipped"]]


def gold_against_systems(params: Params, label: str, examples: Sequence[EvalExample],
                         systems: Mapping[str, Mapping[str, str | tuple[str, Mapping[str, str]]]]) -> pd.DataFrame:
    """Per system: the papers where both the gold and the system's section exist (``pairs``), and the shares where
    the composite without the LLM ranks the gold first, ties, or the system first. ``systems``: name → example id
    → text (in the example's keys) or (text, its key → reference id)."""
    by_id = {e.example_id: e for e in examples}
    rows = []
    for example in examples:
        rows.append({"system": GOLD, "example": example.example_id, "text": keyed_gold_counts(example)[0],
                     "key_to_id": dict(example.default_keys)})
        for system, outputs in systems.items():
            found = outputs.get(example.example_id)
            if found:
                text, keys = found if isinstance(found, tuple) else (found, example.default_keys)
                rows.append({"system": system, "example": example.example_id, "text": text, "key_to_id": dict(keys)})
    frame = pd.DataFrame(rows)
    scores = _score(params, frame, [by_id[e] for e in dict.fromkeys(frame.example)])
    pairs = [(r.example, GOLD, r.system) for r in frame.itertuples() if r.system != GOLD]
    found = verdicts(scores, None, pairs, instrument_settings(params))
    found = found[found.instrument == OFFLINE_COMPOSITE]
    out = []
    for system, part in found.groupby("second", sort=False):
        out.append({SET: label, "system": system, "pairs": len(part), "gold_first": float((part.verdict > 0).mean()),
                    "ties": float((part.verdict == 0).mean()), "system_first": float((part.verdict < 0).mean()),
                    "judge": JUDGE})
    return pd.DataFrame(out, columns=[SET, "system", "pairs", "gold_first", "ties", "system_first", "judge"])


def halves(examples: Sequence[T]) -> tuple[list[T], list[T]]:
    """STRoGeNS's papers split by their position in the file (docs/method.md, "Version 5"): the even positions
    (0, 2, ...), which version 5 was designed on beside Hoang & Kan and RWSG-PRV, and the odd ones, held out."""
    return list(examples[0::2]), list(examples[1::2])


def unresolved(label: str, examples: Sequence[EvalExample]) -> dict:
    """How many of the golds' citations were written as keys, and the share left as written."""
    counts = [keyed_gold_counts(e)[1:] for e in examples]
    missing, total = sum(c[0] for c in counts), sum(c[1] for c in counts)
    return {SET: label, "golds": len(examples), "citations": total, "unresolved": missing,
            "unresolved_share": missing / total if total else 0.0}


def read_ours(folder: Path, examples: Sequence[EvalExample]) -> dict[str, tuple[str, dict[str, str]]]:
    """``crew write`` runs, one folder per paper named by its id, each with the ``generation.json`` it wrote: its
    text in keys and ``key_to_id``, the references' keys as given to it, ``c0`` … for the paper's n-th cited work
    from 0 (:func:`crewlib.eval.real_sets.read_rwsgprv` numbers them ``<paper>:1`` … from 1)."""
    out = {}
    known = {e.example_id for e in examples}
    for path in sorted(Path(folder).glob("*/generation.json")):
        paper = path.parent.name
        if paper in known:
            record = json.loads(path.read_text(encoding="utf-8"))
            keys = {k: f"{paper}:{int(v[1:]) + 1}" for k, v in record["key_to_id"].items()}
            out[paper] = (record["text"], keys)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hoang-kan", help="Hoang & Kan RWSData jsonl")
    parser.add_argument("--rwsgprv", help="RWSG-PRV jsonl")
    parser.add_argument("--strogens", help="STRoGeNS outputs jsonl")
    parser.add_argument("--ours", help="a folder of crew write runs on the RWSG-PRV papers, one per paper id")
    parser.add_argument("--params", default="quick")
    parser.add_argument("--figures", default="figures", help="where the two CSV files go")
    args = parser.parse_args(argv)
    if not (args.hoang_kan or args.rwsgprv or args.strogens):
        parser.error("name at least one set: --hoang-kan, --rwsgprv or --strogens")
    params = load_params(args.params)
    tables, skipped, systems, counts = [], [], [], []
    sets = {"hoang_kan": (read_hoang_kan, args.hoang_kan), "rwsgprv": (read_rwsgprv, args.rwsgprv),
            "strogens": (lambda p: read_strogens(p)[0], args.strogens)}
    for name, (read, path) in sets.items():
        if not path:
            continue
        examples = [e for e in read(path) if e.gold.strip()]
        outputs = read_strogens(path)[1] if name == "strogens" else {}
        if name == "rwsgprv" and args.ours:
            outputs = {"crew (1.5B, crew write)": read_ours(Path(args.ours), examples)}
        parts = [(SET_NAMES[name], examples)]
        if name == "strogens":
            parts = list(zip((SET_NAMES[name], HELD_OUT), halves(examples), strict=True))
        for label, part in parts:
            counts.append(unresolved(label, part))
            table, skips = real_discrimination(params, label, part)
            tables.append(table)
            skipped += skips
            if outputs:
                systems.append(gold_against_systems(params, label, part, outputs))
    _write(Path(resolve_path(args.figures)), tables, systems, counts, skipped)
    return 0


def _write(figures: Path, tables: list[pd.DataFrame], systems: list[pd.DataFrame], counts: list[dict],
           skipped: list[dict]) -> None:
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(figures / DISCRIMINATION_FILE, index=False)
    pd.DataFrame(counts).to_csv(figures / SETS_FILE, index=False)
    pd.set_option("display.width", 250)
    print(pd.DataFrame(counts).round(3).to_string(index=False))
    for label, part in table.groupby(SET, sort=False):
        print(f"\n{label}: share of (gold, damaged) pairs ranked gold first")
        print(part.pivot_table(index="instrument", columns="damage", values="correct").round(2).to_string())
    if systems:
        frame = pd.concat(systems, ignore_index=True)
        frame.to_csv(figures / SYSTEMS_FILE, index=False)
        print("\n", frame.round(3).to_string(index=False))
    if skipped:
        print(f"\n{len(skipped)} damages a gold did not allow:",
              pd.DataFrame(skipped).groupby("damage").size().to_dict())


def measured(figures: Path | None = None) -> pd.DataFrame | None:
    """The real sets' discrimination as last measured (``figures/05_judge_discrimination_real.csv`` of the
    repository, written by :func:`main`), or None where it was never measured."""
    return _read(figures, DISCRIMINATION_FILE)



def measured_systems(figures: Path | None = None) -> pd.DataFrame | None:
    """The human sections against each system's as last measured (``figures/05_gold_vs_systems.csv``), or None."""
    return _read(figures, SYSTEMS_FILE)


def measured_sets(figures: Path | None = None) -> pd.DataFrame | None:
    """Per real set as last measured (``figures/05_real_sets.csv``): papers, citations, unresolved share."""
    return _read(figures, SETS_FILE)


def _read(figures: Path | None, name: str) -> pd.DataFrame | None:
    path = Path(figures or resolve_path("figures")) / name
    return pd.read_csv(path) if path.exists() else None


def composite_view(table: pd.DataFrame) -> pd.DataFrame:
    """Per real set, the composite without the LLM damage by damage (share of pairs with the gold first) and
    its pairs: the rows docs/results.md quotes."""
    part = table[table.instrument == OFFLINE_COMPOSITE]
    view = part.pivot_table(index=SET, columns="damage", values="correct", sort=False)
    view.insert(0, "pairs", part.groupby(SET, sort=False).pairs.sum())
    view.insert(1, "all damages", (part.correct * part.pairs).groupby(part[SET], sort=False).sum() / view.pairs)
    view.insert(2, "worst", view.drop(columns=["pairs", "all damages"]).min(axis=1))
    return view


if __name__ == "__main__":
    raise SystemExit(main())
