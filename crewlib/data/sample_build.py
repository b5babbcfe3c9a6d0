"""Build the bundled sample corpus from its hand-written sources, in the real datasets' schemas.

Sources (``data/sample/authoring/``, written by the project, see ``data/sample/DATASHEET.md``):
``rwg_papers.json``, ``rwg_targets.json``, ``multinews.json``, ``long_documents.json``.
Outputs (``data/sample/``), each in the layout its real loader reads:

- ``oarelatedwork_sample.jsonl`` — OARelatedWork ``abstracts`` rows: sentence records with
  citation spans pointing into ``bibliography``, ``referenced`` papers with their own
  ``citations``; authoring markers ``[key]`` become author–year citations with spans;
- ``multinews_sample.jsonl`` — Multi-News rows (``document`` joined by ``|||||``, ``summary``);
- ``arxiv_sample.jsonl`` / ``pubmed_sample.jsonl`` — the original arXiv/PubMed layout
  (``article_text``, ``abstract_text`` with ``<S>`` tags, ``section_names``, ``sections``).

``python -m crewlib.data.sample_build`` rewrites them; a test checks that the shipped files
equal a fresh build, so sources and outputs cannot drift apart.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from crewlib.data.loaders import SAMPLE_DIR, SAMPLE_FILES

AUTHORING = SAMPLE_DIR / "authoring"
_MARKER = re.compile(r"\[([a-z0-9_]+(?:\s*;\s*[a-z0-9_]+)*)\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[(\"'])")
DISTRACTORS_PER_TARGET = 6  # pool papers a target "cites elsewhere in the paper" besides its related work


def numeric_id(key: str) -> int:
    """A stable integer id (OARelatedWork ids are uint64) for an authoring key."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)


def split_sentences(paragraph: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(paragraph.strip()) if s.strip()]


def author_year(paper: dict) -> str:
    surnames = [a.split()[-1] for a in paper.get("authors") or ["Anonymous"]]
    if len(surnames) == 1:
        who = surnames[0]
    elif len(surnames) == 2:
        who = f"{surnames[0]} and {surnames[1]}"
    else:
        who = f"{surnames[0]} et al."
    return f"{who}, {paper['year']}"


def _sentence(text: str, title_path: list[str]) -> dict:
    return {"title_path": title_path, "text": text, "citations": [], "references": []}


def _cited_sentence(text: str, title_path: list[str], papers: dict, bib_index: dict[str, int]) -> dict:
    """Replace ``[key; key]`` markers by ``(Author et al., 2019; ...)`` and record each span."""
    out, spans, pos = [], [], 0
    for match in _MARKER.finditer(text):
        out.append(text[pos:match.start()])
        keys = [k.strip() for k in match.group(1).split(";")]
        cursor = sum(len(p) for p in out) + 1  # after "("
        parts = []
        for key in keys:
            label = author_year(papers[key])
            spans.append({"index": bib_index[key], "start": cursor, "end": cursor + len(label)})
            parts.append(label)
            cursor += len(label) + 2  # "; "
        out.append("(" + "; ".join(parts) + ")")
        pos = match.end()
    out.append(text[pos:])
    record = _sentence("".join(out), title_path)
    record["citations"] = spans
    return record


def _paragraph_records(text: str, title_path: list[str]) -> list[list[dict]]:
    return [[_sentence(s, title_path) for s in split_sentences(p)] for p in text.split("\n\n") if p.strip()]


def _bib_entry(paper: dict | None, key: str) -> dict:
    if paper is None:
        return {"id": None, "title": key, "year": None, "authors": []}
    return {"id": numeric_id(paper["key"]), "title": paper["title"], "year": paper["year"],
            "authors": paper.get("authors", [])}


def _pool_for(target: dict, cited: list[str], papers: dict) -> list[str]:
    """Gold papers plus distractors: papers the gold ones cite (no newer than the target)."""
    extra = sorted({c for key in cited for c in papers[key].get("cites", [])
                    if c not in cited and papers[c]["year"] <= target["year"]},
                   key=lambda k: hashlib.sha256(f"{target['key']}:{k}".encode()).hexdigest())
    return cited + extra[:DISTRACTORS_PER_TARGET]


def build_oarelatedwork_rows(papers_list: list[dict], targets: list[dict]) -> list[dict]:
    papers = {p["key"]: p for p in papers_list}
    rows = []
    for target in targets:
        cited = list(dict.fromkeys(k.strip() for m in _MARKER.finditer(target["related_work"])
                                   for k in m.group(1).split(";")))
        pool = _pool_for(target, cited, papers)
        # Real bibliographies also list works that are not in the dataset (id null).
        unlinked = [f"An unlinked work cited by {target['title'][:40]}"]
        bibliography = [_bib_entry(papers[k], k) for k in pool] + [_bib_entry(None, t) for t in unlinked]
        bib_index = {k: i for i, k in enumerate(pool)}
        headings = target.get("sections") or []
        sections = []
        for i, paragraph in enumerate(p for p in target["related_work"].split("\n\n") if p.strip()):
            path = ["Related Work"] + ([headings[i]] if i < len(headings) else [])
            sentences = [_cited_sentence(s, path, papers, bib_index) for s in split_sentences(paragraph)]
            if sections and sections[-1]["title_path"] == path:
                sections[-1]["paragraphs"].append(sentences)
            else:
                sections.append({"title_path": path, "paragraphs": [sentences]})
        referenced = []
        for key in pool:
            paper = papers[key]
            referenced.append({
                "id": numeric_id(key), "s2orc_id": None, "mag_id": None, "doi": None, "title": paper["title"],
                "hierarchy": _paragraph_records(paper["abstract"], ["Abstract"]),
                "authors": paper.get("authors", []), "year": paper["year"], "fields_of_study": ["Computer Science"],
                "citations": [numeric_id(c) for c in paper.get("cites", [])],
                "bibliography": [_bib_entry(papers[c], c) for c in paper.get("cites", [])],
                "non_plaintext_content": [],
            })
        rows.append({
            "id": numeric_id(target["key"]), "s2orc_id": None, "mag_id": None, "doi": None,
            "title": target["title"], "abstract": _paragraph_records(target["abstract"], ["Abstract"]),
            "related_work": sections, "hierarchy": [], "authors": target.get("authors", []),
            "year": target["year"], "fields_of_study": ["Computer Science"], "referenced": referenced,
            "bibliography": bibliography, "non_plaintext_content": [],
        })
    return rows


def build_multinews_rows(clusters: list[dict]) -> list[dict]:
    return [{"id": c["id"], "document": " ||||| ".join(d.strip() for d in c["documents"]),
             "summary": "– " + c["summary"].strip()} for c in clusters]


def build_long_document_rows(documents: list[dict], domain: str) -> list[dict]:
    rows = []
    for doc in documents:
        if doc["domain"] != domain:
            continue
        sections = [[s for p in sec["text"].split("\n\n") for s in split_sentences(p)] for sec in doc["sections"]]
        rows.append({
            "article_id": doc["id"], "title": doc["title"],
            "article_text": [s for sec in sections for s in sec],
            "abstract_text": [f"<S> {s} </S>" for s in split_sentences(doc["abstract"])],
            "labels": None, "section_names": [sec["name"] for sec in doc["sections"]], "sections": sections,
        })
    return rows


def build_all(authoring: Path = AUTHORING) -> dict[str, str]:
    """Every output file's text, keyed by task (nothing written)."""
    def load(name: str) -> list[dict]:
        return json.loads((authoring / name).read_text(encoding="utf-8"))

    outputs = {
        "oarelatedwork": build_oarelatedwork_rows(load("rwg_papers.json"), load("rwg_targets.json")),
        "multinews": build_multinews_rows(load("multinews.json")),
        "arxiv": build_long_document_rows(load("long_documents.json"), "arxiv"),
        "pubmed": build_long_document_rows(load("long_documents.json"), "pubmed"),
        "instrument_holdout": build_oarelatedwork_rows(
            load("rwg_papers.json") + load("instrument_holdout_papers.json"), load("instrument_holdout_targets.json")),
    }
    return {task: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows) for task, rows in outputs.items()}


def main() -> None:
    for task, text in build_all().items():
        SAMPLE_FILES[task].write_text(text, encoding="utf-8")
        print(f"wrote {SAMPLE_FILES[task]} ({text.count(chr(10))} rows)")


if __name__ == "__main__":
    main()
