"""What a notebook's run will cost before it runs: LLM calls and tokens, estimated without calling anything.

``python -m crewlib.experiments.plan --params full`` (or ``-p plan_only True`` in notebooks 05–10, which print it
and stop before the first call). The estimate scales the **quick run's recorded costs** — the shipped tables'
calls and tokens per section of each system (``figures/NN_*.csv``) and the recorded judge answers' mean tokens
(``notebooks/llm_cache``) — to the params' run:

- sections: systems × papers, the papers being the run's (the bundled sample counted; the Hub's evaluation split is
  the paper's 366, its test splits ``targets``/``sq2e.documents``/``human.pairs`` where the params say);
- rounds: CREW, the Orchestrator and SRW in proportion to their ``rounds`` (those of the params file the notebook's
  shipped run used, its ``params_file`` parameter → the run's);
- judges: each section judged on three dimensions by each judge of ``eval.judges`` (one when unset);
- notebook 08 adds its team sizes (``ablations.llm.agents``; a size the quick run did not play costs its largest
  team's per agent) and MA-RWG's ablation on its ``ablations.marwg.targets`` papers.

It omits the instrument's discrimination test, the paired comparisons (see docs/method.md, "The instrument", for
their call counts) and the LLM calls of MA-RWG's own measures (ClaP, TQ) in its ablation, and a larger model writes
longer answers than the small one that was recorded: read it as an order of magnitude, not a bill.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
from pathlib import Path

import pandas as pd

from crewlib.config import PROJECT_ROOT, load_params
from crewlib.experiments.paper import SPLIT
from crewlib.schema import Params

FIGURES = PROJECT_ROOT / "figures"
ROUND_SYSTEMS = ("crew", "orchestrator", "srw")  # the systems whose calls grow with their rounds
JUDGE_DIMENSIONS = 3  # coverage, logic, relevance: one call each per section and judge
# notebook → (its table of per-section costs, the columns naming a row, the systems column when not the row)
TABLES = {"05": ("05_crew_table.csv", ["system"]), "06": ("06_transfer.csv", ["backbone", "system"]),
          "07": ("07_multinews.csv", ["system"]), "08": ("08_llm_ablations.csv", ["variant"]),
          "10": ("10_sq2e.csv", ["dataset", "system"])}
MARWG_PART = "MA-RWG's ablation / "  # notebook 08's MA-RWG rows (scored by CitP, ClaP, TQ: not estimated)
CLUSTERS_FULL = 5622  # Multi-News test clusters (notebook 07 with targets=None)


@functools.cache
def judge_call_tokens(cache_dir: Path = PROJECT_ROOT / "notebooks" / "llm_cache") -> tuple[float, float]:
    """Mean prompt and completion tokens of the recorded absolute-judge answers (the quick run's judge); the cache
    is read once per process."""
    from crewlib import prompts

    marker = prompts.JUDGE_SYSTEM[:60]
    prompt, completion = [], []
    for path in cache_dir.glob("*/*.json"):
        entry = json.loads(path.read_text())
        messages = entry["request"].get("messages") or [{}]
        if messages[0].get("content", "").startswith(marker):
            prompt.append(entry["response"].get("prompt_tokens") or 0)
            completion.append(entry["response"].get("completion_tokens") or 0)
    return (sum(prompt) / len(prompt), sum(completion) / len(completion)) if prompt else (0.0, 0.0)


def shipped_rounds(notebook: str) -> dict[str, int]:
    """The rounds each round-based system played in the notebook's shipped run: those of the params file its
    ``params_file`` parameter names (the run the figures hold)."""
    path = next((PROJECT_ROOT / "notebooks").glob(f"{notebook}_*.ipynb"))
    cells = json.loads(path.read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    baselines = load_params(PROJECT_ROOT / re.search(r'params_file = "([^"]+)"', source).group(1)).baselines
    rounds = {s: getattr(baselines, s).rounds for s in ROUND_SYSTEMS}
    return {s: r for s, r in rounds.items() if isinstance(r, int)}


def papers(params: Params, notebook: str) -> tuple[int, str]:
    """How many papers (clusters, documents) the run writes for, and where the number comes from."""
    if notebook == "10":
        n = params.sq2e.documents
        return (n, "sq2e.documents per dataset") if n else (3, "the bundled sample's documents per dataset")
    if notebook == "07":
        return (6, "the bundled clusters") if params.data.source == "sample" else (CLUSTERS_FULL,
                                                                                      "the Multi-News test split")
    if notebook == "09" and params.human.pairs:
        return params.human.pairs, "human.pairs"
    if params.data.source == "sample":
        from crewlib.tasks import build_tasks

        return len(build_tasks(params).evaluation), "the bundled sample's evaluation split"
    return SPLIT["evaluation"], "the paper's evaluation split (366)"


def plan(params: Params, notebook: str, figures: Path = FIGURES) -> pd.DataFrame:
    """One row per system (or variant, backbone) and one for the judges: estimated calls and tokens of the run."""
    n, source = papers(params, notebook)
    judges = len(params.eval.judges or [None])
    rows, sections = [], 0
    shipped = shipped_rounds(notebook) if notebook in TABLES else {}
    if notebook in TABLES:
        name, keys = TABLES[notebook]
        table = pd.read_csv(figures / name)
        if notebook == "06":  # each backbone of the run with the quick backbones' mean cost per system
            costs = table.groupby("system", sort=False)[["LLM calls", "tokens in", "tokens out"]].mean().reset_index()
            table = pd.DataFrame([{**c, "backbone": b.name} for b in params.transfer.backbones
                                  for c in costs.to_dict("records")])
        for _, row in table.iterrows():
            label = " / ".join(str(row[k]) for k in keys)
            rows.append(_scaled(params, label, str(row.get("system", "crew")), row, n, shipped))
    if notebook == "08":
        rows += _ablation_parts(params, n, figures, shipped)
    written = [r for r in rows if "calls" in r]
    sections = sum(r["sections"] for r in written)
    judged = sum(r["sections"] for r in written if not r["part"].startswith(MARWG_PART))  # MA-RWG's: its own measures
    if notebook == "09":
        sections = judged = n * 2  # CREW's and SRW's sections (notebook 05's, when its run folder is kept)
        rows.append({"part": "LLM annotators (3, one call a pair; when no human sheet is given)", "sections": n,
                     "calls": 3 * n})
    if notebook != "10":  # SQ2E is scored by ROUGE, BERTScore and factual consistency, not the judges
        prompt, completion = judge_call_tokens()
        calls = judged * JUDGE_DIMENSIONS * judges
        rows.append({"part": f"judges ({judges} × {JUDGE_DIMENSIONS} dimensions a section)", "sections": judged,
                     "calls": calls, "prompt tokens": calls * prompt, "completion tokens": calls * completion})
    frame = pd.DataFrame(rows, columns=["part", "sections", "calls", "prompt tokens", "completion tokens"])
    total = frame[["calls", "prompt tokens", "completion tokens"]].sum(min_count=1)
    frame = pd.concat([frame, pd.DataFrame([{"part": "total", "sections": sections, **total}])], ignore_index=True)
    frame.attrs["papers"] = f"{n} ({source})"
    return frame.round(0)


def _scaled(params: Params, label: str, system: str, cost: pd.Series, n: int, shipped: dict[str, int],
            per_section: float = 1.0) -> dict:
    """One part of the plan: ``n`` sections with the quick run's ``cost`` per section (LLM calls, tokens in, tokens
    out) times ``per_section``, a round-based system's scaled to the run's rounds."""
    if pd.isna(cost["LLM calls"]):
        return {"part": f"{label} (wrote nothing in the quick run: not estimated)", "sections": n}
    rounds = getattr(getattr(params.baselines, system, None), "rounds", None)
    scale = n * per_section * (rounds / shipped[system] if system in shipped and isinstance(rounds, int) else 1.0)
    return {"part": label, "sections": n, "calls": cost["LLM calls"] * scale,
            "prompt tokens": cost["tokens in"] * scale, "completion tokens": cost["tokens out"] * scale}


def _ablation_parts(params: Params, n: int, figures: Path, shipped: dict[str, int]) -> list[dict]:
    """Notebook 08's parts beside its variants: each team size of ``ablations.llm.agents`` but the env's (CREW's
    row) at the quick run's cost of that size — a size it did not play at its largest team's cost per agent — and
    MA-RWG with each component off on the first ``ablations.marwg.targets`` papers."""
    rows = []
    teams = pd.read_csv(figures / "08_llm_agents.csv").set_index("agents")
    for m in params.ablations.llm.agents:
        if m != params.env.n_agents:
            measured = m if m in teams.index else int(teams.index.max())
            rows.append(_scaled(params, f"{m} agents" + ("" if m == measured else f" (from {measured} agents' cost)"),
                                "crew", teams.loc[measured], n, shipped, m / measured))
    marwg = figures / "08_marwg_ablations.csv"
    if marwg.exists():
        k = min(params.ablations.marwg.targets or n, n)
        rows += [_scaled(params, f"{MARWG_PART}{row['variant']}", "marwg", row, k, shipped)
                 for _, row in pd.read_csv(marwg).iterrows()]
    else:
        rows.append({"part": "MA-RWG's ablation (no quick run in figures/: not estimated)", "sections": 0})
    return rows


def show_plan(params: Params, notebook: str) -> None:
    """A notebook's ``plan_only``: show the estimate and stop the notebook before anything runs (papermill ends
    with exit status 0)."""
    from IPython.display import display

    table = plan(params, notebook)
    print(f"plan only: estimated LLM calls and tokens of this run (papers: {table.attrs['papers']}); nothing was "
          "called. crewlib/experiments/plan.py says how it is estimated.")
    display(table)
    raise SystemExit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="full")
    parser.add_argument("notebooks", nargs="*", default=["05", "06", "07", "08", "09", "10"])
    args = parser.parse_args()
    params = load_params(args.params)
    pd.set_option("display.width", 200)
    for notebook in args.notebooks:
        table = plan(params, notebook)
        print(f"\nnotebook {notebook}: papers {table.attrs['papers']}")
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
