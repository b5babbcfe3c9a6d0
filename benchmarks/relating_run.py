"""A written section read paragraph by paragraph, as issue 45's done-when asks: theme, comparison, closing.

Usage: python benchmarks/relating_run.py RUN_DIR demo:INDEX      (a folder of ``python -m crewlib.demo``)
       python benchmarks/relating_run.py RUN_DIR tex:MAIN.tex    (a folder of ``crew write --tex MAIN.tex``)

For each paragraph: the works it cites, whether it holds a grounded sentence comparing two works or more
(synthesis) and a supported sentence relating them to the paper (positioning), and whether that sentence closes
it; then the share of the references with an abstract that are cited, the faults of
:func:`crewlib.sections.section_faults`, the section's relating measures and the run's cost (``summary.json``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.citations import check_citations  # noqa: E402
from crewlib.config import load_params  # noqa: E402
from crewlib.eval import relating  # noqa: E402
from crewlib.positioning import is_positioning  # noqa: E402
from crewlib.sections import OutputChecks, section_faults  # noqa: E402
from crewlib.tasks import Task, build_tasks  # noqa: E402


def run_task(params, kind: str) -> Task:
    """The task a run wrote for: ``demo:INDEX`` or ``tex:MAIN.tex``."""
    what, _, value = kind.partition(":")
    if what == "demo":
        from crewlib.demo import demo_target

        return demo_target(params, int(value))[1]
    if what == "tex":
        from crewlib.write.command import add_arguments, load_inputs
        from crewlib.write.writer import own_example

        parser = argparse.ArgumentParser()
        add_arguments(parser)
        title, abstract, introduction, refs = load_inputs(parser.parse_args(["--tex", value]))
        example = own_example(title, abstract, refs.references, introduction)
        return build_tasks(params, [example], min_connections=0).tasks[example.target_id]
    raise SystemExit(f"unknown run kind {kind!r}: demo:INDEX or tex:MAIN.tex")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("kind", help="demo:INDEX or tex:MAIN.tex")
    parser.add_argument("--params", default="quick")
    args = parser.parse_args()
    params = load_params(args.params)
    task = run_task(params, args.kind)
    run = Path(args.run_dir)
    summary = json.loads((run / "summary.json").read_text())
    text = json.loads((run / ("trace.json" if args.kind.startswith("demo") else "generation.json")).read_text())
    text = text.get("final_draft") or text.get("text") or ""
    threshold = params.output.support_threshold
    works = {k.lower(): f"{r.title}. {r.abstract}" for k, r in task.reference_by_key.items()}
    print(f"{task.title}\n")
    for i, para in enumerate(relating.section_paragraphs(text), 1):
        known = [works[w] for w in para.works if w in works]
        closing = [s.text for s in para.sentences
                   if not s.roadmap and is_positioning(s.bare, task.title, task.abstract, known, threshold,
                                                       bool(s.works))]
        compares = any(relating._synthesises(s, works, threshold) for s in para.sentences)
        closes = " (closes)" if closing and para.sentences[-1].text == closing[-1] else ""
        print(f"[P{i}] works {', '.join(para.works)} · synthesis "
              f"{'n/a' if len(para.works) < 2 else 'yes' if compares else 'NO'} · positioning "
              f"{'yes' if closing else 'NO'}{closes}")
        for sentence in para.sentences:
            print(f"   - {sentence.text}")
    readable = task.readable_ids
    cited = set(check_citations(text, task.key_to_id).cited_ids)
    print(f"\ncited: {len(cited & readable)} of {len(readable)} references with an abstract "
          f"({len(cited & readable) / max(len(readable), 1):.3f}); pool {len(task.references)}")
    print("faults:", section_faults(text, task, OutputChecks.from_params(params)))
    print("relating:", {k: None if v is None else round(v, 3) for k, v in
                        relating.task_relating(text, task, threshold, params.eval.paragraph_sentences).items()})
    print("cost:", {k: summary.get(k) for k in ("calls", "prompt_tokens", "prompt_tokens_cached", "completion_tokens",
                                                "wall_time_s")})


if __name__ == "__main__":
    main()
