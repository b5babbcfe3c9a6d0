"""``crew write --select K`` on the bundled sample: does it find a paper's references in a whole library?

Usage: python benchmarks/select_recall.py [--k 10 20 40] [--holdout]

The library is every reference of every paper of the sample (each target's own references hidden among
all the others, deduplicated by id; the instrument's held-out papers too when ``--holdout``). For each
paper, its title and abstract are the query (:func:`crewlib.write.select_references`, BM25 and MiniLM
combined); recall@K is the share of the paper's references found in the top K. It prints recall per
paper and the mean, for the combined score, for each half alone, and by chance (K over the library's size).
"""

from __future__ import annotations

import argparse
import os

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.config import PROJECT_ROOT  # noqa: E402
from crewlib.data.loaders import load_oarelatedwork  # noqa: E402
from crewlib.write.library import relevance_scores  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--holdout", action="store_true", help="add the instrument's 10 held-out papers")
    args = parser.parse_args()
    files = [PROJECT_ROOT / "data/sample/oarelatedwork_sample.jsonl"]
    if args.holdout:
        files.append(PROJECT_ROOT / "data/sample/instrument_holdout.jsonl")
    papers = [p for f in files for p in load_oarelatedwork(f)[0]]
    library = {r.id: r for p in papers for r in p.references}
    refs = list(library.values())
    texts = [r.text for r in refs]
    print(f"{len(papers)} papers, library of {len(refs)} distinct references")
    rows = []
    for paper in papers:
        query = f"{paper.title}. {paper.abstract}"
        combined, lexical, semantic = relevance_scores(query, texts)
        own = {r.id for r in paper.references}
        for name, score in (("combined", combined), ("bm25", lexical), ("minilm", semantic)):
            order = [refs[i].id for i in sorted(range(len(refs)), key=lambda i: (-score[i], i))]
            rows.append({"paper": paper.target_id, "references": len(own), "score": name,
                         **{f"recall@{k}": len(own & set(order[:k])) / len(own) for k in args.k}})
    table = pd.DataFrame(rows)
    print(table[table.score == "combined"].drop(columns="score").to_string(index=False, float_format="%.2f"))
    means = table.groupby("score")[[f"recall@{k}" for k in args.k]].mean()
    means.loc["chance (K / library)"] = [min(1.0, k / len(refs)) for k in args.k]
    print("\nmean over the papers")
    print(means.round(3).to_string())


if __name__ == "__main__":
    main()
