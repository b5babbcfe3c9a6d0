"""Draft quality in the worst case: CREW against single prompts to the same model, paper by paper.

Usage: python benchmarks/quality.py [--params quick] [--targets N] [--systems crew,long_context,rag,srw]
                                    [--local papers.jsonl ...] [--hoang-kan rws.jsonl ...] [--recent papers.jsonl ...]
                                    [--crew-rounds N|auto] [--judge]

Targets: the evaluation targets of the params' data (the bundled sample by default), plus every paper of each
``--local`` file in the simple layout (docs/guide.md, "Data": id, title, abstract, references, related_work). Per
system and paper it prints what a reviewer checks first, read off the finished section: the share of the
references with an abstract that are cited; repeated sentences, first-person sentences, uncited claims,
unsupported cited sentences and pasted notes (``crewlib.sections.section_faults``); citations the draft had
and lost; invalid-JSON and cut-answer fallbacks; LLM calls, tokens, tokens per cited reference and wall time.
Then the mean and the worst case over the papers per system. ``--judge`` adds the run's own LLM judge's
Overall (a small-model judgement when the embedded model writes). Generations go to ``outputs/quality/`` and
every answer to the LLM cache, so a rerun is fast and pays for nothing twice.

``--recent``: papers as a user brings them to ``crew write`` — title, abstract, introduction and references with
authors and years (``id, title, abstract, introduction, related_work, cited[{title, authors, year, abstract}]``,
the layout of recent papers with their own sections). Every system and, as the human reference, each paper's own
related-work section get the relating measures (crewlib.eval.relating: positioning, synthesis, theme coherence,
content per citation); the human section's author–year citations are mapped to its works by first author and year.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from relating_golds import map_works, surname, work_text  # noqa: E402  (benchmarks/, beside this script)

from crewlib.citations import check_citations  # noqa: E402
from crewlib.config import load_params, resolve_path, with_overrides  # noqa: E402
from crewlib.data.loaders import load_task_data  # noqa: E402
from crewlib.eval import EvalExample, Evaluator  # noqa: E402
from crewlib.eval.relating import relating_scores, task_relating  # noqa: E402
from crewlib.experiments import run_generations  # noqa: E402
from crewlib.llm import connect  # noqa: E402
from crewlib.schema import Params
from crewlib.sections import OutputChecks, section_faults  # noqa: E402
from crewlib.tasks import build_tasks  # noqa: E402

SYSTEMS = "crew,long_context,rag,srw"
SRW_PAPER_ROUNDS = 15  # SRW's select-read rounds in the CREW paper (docs/method.md, "SRW")
FAULTS = ["repeated_sentences", "first_person", "uncited_claims", "unsupported", "title_notes", "prompt_echoes",
          "slips"]
WORST = {"cited_share": "min", **{f: "max" for f in FAULTS}, "lost_citations": "max", "invalid_json": "max",
         "cut_answers": "max", "calls": "max", "tokens": "max", "wall_s": "max"}


def targets(params: Params, n: int | None, local: list[str]) -> tuple[list, dict]:
    """(examples, target id → task): the params' evaluation targets, then every paper of the local files."""
    pairs = build_tasks(params).evaluation[:n]
    for path in local:
        local_params = with_overrides(params, {"data": {"source": "local", "oarelatedwork_path": path}})
        examples, report = load_task_data(local_params, "oarelatedwork")
        print(f"{path}: {report}")
        own = build_tasks(local_params, examples, min_connections=0)
        pairs += [(e, own.tasks[e.target_id]) for e in examples]
    return [e for e, _ in pairs], {t.target_id: t for _, t in pairs}


def from_hoang_kan(path: str, out_dir: str) -> str:
    """A file of the Hoang & Kan (2010) RWSData layout (id, related_work, cited [{idx, title, abstract}]) written
    in the simple layout; the path written. The papers have no title or abstract of their own: the ACL id stands
    for the title and the gold section's first sentence for the abstract (these counts never compare to the gold).
    """

    from crewlib.text import sentences

    out = os.path.join(out_dir, os.path.basename(path).replace(".jsonl", "") + ".simple.jsonl")
    os.makedirs(out_dir, exist_ok=True)
    with open(path, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for line in src:
            paper = json.loads(line)
            refs = [{"key": f"ref{c['idx']}", "title": c["title"], "abstract": c.get("abstract") or ""}
                    for c in paper["cited"]]
            dst.write(json.dumps({"id": paper["id"], "title": f"ACL Anthology paper {paper['id']}",
                                  "abstract": sentences(paper["related_work"])[0], "references": refs,
                                  "related_work": paper["related_work"], "cited": [r["key"] for r in refs]}) + "\n")
    return out


def from_recent(path: str, out_dir: str) -> str:
    """A file of recent papers with their own sections (``--recent``) written in the simple layout as a user brings
    them: title, abstract, introduction, references keyed ``ref1..`` with their authors and years; the path."""

    out = os.path.join(out_dir, os.path.basename(path).replace(".jsonl", "") + ".recent.jsonl")
    os.makedirs(out_dir, exist_ok=True)
    with open(path, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for line in src:
            paper = json.loads(line)
            refs = [{"key": f"ref{i + 1}", "title": c["title"], "abstract": c.get("abstract") or "",
                     "authors": c.get("authors") or [], "year": c.get("year")} for i, c in enumerate(paper["cited"])]
            dst.write(json.dumps({"id": paper["id"], "title": paper["title"], "abstract": paper["abstract"],
                                  "introduction": paper.get("introduction") or "", "references": refs,
                                  "related_work": paper["related_work"], "cited": [r["key"] for r in refs]}) + "\n")
    return out


def relating_rows(frame: pd.DataFrame, examples: list, tasks: dict, threshold: float, unit_sentences: int,
                  no_paper_text: set[str] = frozenset()) -> pd.DataFrame:
    """The relating measures of every section written and, as ``human``, of each paper's own section; positioning
    is undefined (NaN) on the papers of ``no_paper_text`` (Hoang & Kan's: no abstract of their own)."""
    rows = []
    for row in frame.itertuples():
        rows.append({"system": row.system, "paper": row.example,
                     **task_relating(row.text, tasks[row.example], threshold, unit_sentences)})
    for example in examples:
        if example.gold_related_work.strip():
            cited = [(surname(r.authors[0]) if r.authors else "", r.year,
                      work_text(r.title, r.abstract, "title+abstract")) for r in example.references]
            works, _, _ = map_works(example.gold_related_work, cited)
            keyed = {k.lower(): work_text(r.title, r.abstract, "title+abstract")
                     for k, r in tasks[example.target_id].reference_by_key.items()}
            rows.append({"system": "human", "paper": example.target_id,
                         **relating_scores(example.gold_related_work, example.title, example.abstract,
                                           {**keyed, **works}, threshold, unit_sentences)})
    out = pd.DataFrame(rows)
    out.loc[out.paper.isin(no_paper_text), ["positioning", "positioning_any"]] = float("nan")
    return out


def paper_rows(frame: pd.DataFrame, tasks: dict, checks: OutputChecks) -> pd.DataFrame:
    """One row per system and paper: the reviewer's counts of the module docstring."""
    rows = []
    for row in frame.itertuples():
        task = tasks[row.example]
        readable = task.readable_ids
        cited = set(check_citations(row.text, row.key_to_id).cited_ids)
        reasons = row.fallback_reasons or {}
        invalid = sum(v for k, v in reasons.items() if "OutputValidationError" in k and "cut at" not in k)
        cut = sum(v for k, v in reasons.items() if "cut at" in k)
        tokens = row.prompt_tokens + row.completion_tokens
        rows.append({"system": row.system, "paper": row.example, "references": len(task.references),
                     "with_abstract": len(readable), "cited_share": len(cited & readable) / max(len(readable), 1),
                     **{k: v for k, v in section_faults(row.text, task, checks).items() if k in FAULTS},
                     "lost_citations": len((row.notes or {}).get("lost_citations", [])),
                     "invalid_json": invalid, "cut_answers": cut, "calls": row.calls, "tokens": tokens,
                     "tokens_per_cited": tokens / len(cited) if cited else float("nan"),
                     "words": len(row.text.split()), "wall_s": row.wall_s})
    return pd.DataFrame(rows)


def add_paper_arguments(parser: argparse.ArgumentParser, systems: str) -> None:
    """The options that choose the params, the systems and the papers (this script's and ``benchmarks/cost.py``'s)."""
    parser.add_argument("--params", default="quick")
    parser.add_argument("--targets", type=int, default=None, help="the first N evaluation targets (default: all)")
    parser.add_argument("--systems", default=systems)
    parser.add_argument("--local", action="append", default=[], help="a JSONL file of papers in the simple layout")
    parser.add_argument("--hoang-kan", action="append", default=[],
                        help="a JSONL file of the Hoang & Kan (2010) layout (id, related_work, cited)")
    parser.add_argument("--recent", action="append", default=[],
                        help="a JSONL file of recent papers with their introduction and own section (see above)")
    parser.add_argument("--papers", default=None, help="only these paper ids, comma-separated (default: every paper)")
    parser.add_argument("--crew-rounds", default=None, help="CREW's rounds: a number or auto (default: the params')")
    parser.add_argument("--srw-rounds", type=int, default=SRW_PAPER_ROUNDS,
                        help=f"SRW's select-read rounds (default: the paper's {SRW_PAPER_ROUNDS}; params quick reads 6 "
                             "for the notebooks' time, half the pool of most papers here)")


def run_params(args: argparse.Namespace) -> Params:
    """The params of :func:`add_paper_arguments`' options: ``--params`` with CREW's and SRW's rounds set."""
    params = load_params(args.params)
    if args.crew_rounds:
        rounds = args.crew_rounds if args.crew_rounds == "auto" else int(args.crew_rounds)
        params = with_overrides(params, {"baselines": {"crew": {"rounds": rounds}}})
    return with_overrides(params, {"baselines": {"srw": {"rounds": args.srw_rounds}}})


def papers(args: argparse.Namespace, params: Params, folder) -> tuple[list, dict]:
    """(examples, target id → task) of :func:`add_paper_arguments`' options; converted files are written to
    ``folder``."""
    local = (args.local + [from_hoang_kan(p, folder) for p in args.hoang_kan]
             + [from_recent(p, folder) for p in args.recent])
    examples, tasks = targets(params, args.targets, local)
    if args.papers:
        chosen = set(args.papers.split(","))
        examples = [e for e in examples if e.target_id in chosen]
        if missing := chosen - {e.target_id for e in examples}:
            raise SystemExit(f"error: --papers: no paper {', '.join(sorted(missing))} among the papers chosen")
    return examples, tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_paper_arguments(parser, SYSTEMS)
    parser.add_argument("--judge", action="store_true", help="add the run's own LLM judge's Overall")
    args = parser.parse_args()
    params = run_params(args)
    examples, tasks = papers(args, params, resolve_path("outputs/quality"))
    client = connect(params)
    frame = run_generations(args.systems.split(","), examples, params, client, tasks=tasks,
                            out_dir=resolve_path("outputs/quality")).frame()
    failed = frame[frame.text.isna()]
    frame = frame[frame.text.notna()].copy()
    rows = paper_rows(frame, tasks, OutputChecks.from_params(params))
    if args.judge:
        scores = Evaluator(params).score(frame, [EvalExample.from_rwg(e) for e in examples], metrics=["judge"],
                                         progress=False)
        overall = scores[scores.metric == "judge_overall"].set_index(["system", "example"])["value"]
        rows["judge_overall"] = [overall.get((r.system, r.paper)) for r in rows.itertuples()]
    pd.set_option("display.width", 220)
    pd.set_option("display.max_columns", 30)
    print(f"model: {client.model} · {len(examples)} papers · CREW rounds: {params.baselines.crew.rounds} · "
          f"SRW rounds: {params.baselines.srw.rounds}")
    print(rows.round(3).to_string(index=False))
    numeric = rows.drop(columns=["paper"])
    print("\nmean over the papers:")
    print(numeric.groupby("system", sort=False).mean().round(3).to_string())
    print("\nworst case over the papers:")
    print(numeric.groupby("system", sort=False).agg(WORST).round(3).to_string())
    hoang_kan = {json.loads(line)["id"] for path in args.hoang_kan
                 for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()}
    relating = relating_rows(frame, examples, tasks, params.output.support_threshold,
                             params.eval.paragraph_sentences, hoang_kan)
    print("\nrelating measures (crewlib.eval.relating; human: each paper's own section), mean over the papers:")
    print(relating.drop(columns=["paper"]).groupby("system", sort=False).mean().round(3).to_string())
    print("\nworst case over the papers (min; content per citation: min too):")
    print(relating.drop(columns=["paper"]).groupby("system", sort=False).min().round(3).to_string())
    relating.to_csv(resolve_path("outputs/quality") / "relating.csv", index=False)
    if not failed.empty:
        print("\nno section:", failed[["system", "example", "error"]].to_string(index=False))


if __name__ == "__main__":
    main()
