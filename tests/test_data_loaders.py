"""Loaders on rows in each dataset's real layout, their bad-input paths, and the bundled sample."""

from __future__ import annotations

import json
import time

import pytest

from crewlib.data import (
    SAMPLE_FILES,
    DatasetUnavailableError,
    RecordError,
    load_long_documents,
    load_multinews,
    load_oarelatedwork,
)
from crewlib.data.loaders import parse_long_document_row, parse_multinews_row, parse_oarelatedwork_row
from crewlib.data.records import Reference, RWGExample


def sentence(text, cites=()):
    return {"title_path": ["Related Work"], "text": text, "references": [],
            "citations": [{"index": i, "start": 0, "end": 3} for i in cites]}


def oarw_row(**changes):
    """A row in OARelatedWork's `abstracts` layout (paragraphs of sentence records, spans into bibliography)."""
    row = {
        "id": 101, "title": "Target paper", "year": 2021,
        "abstract": [[sentence("We study summarisation."), sentence("It works.")]],
        "related_work": [{"title_path": ["Related Work"],
                          "paragraphs": [[sentence("A did X.", [0]), sentence("B and C did Y.", [1, 2, 3])]]}],
        "referenced": [
            {"id": 7, "title": "Paper A", "hierarchy": [[sentence("A abstract one."), sentence("Two.")]],
             "citations": [8], "year": 2018},
            {"id": 8, "title": "Paper B", "hierarchy": [[sentence("B abstract.")]], "citations": []},
            {"id": 9, "title": "Paper D", "hierarchy": [[sentence("D abstract.")]], "citations": [7]},
        ],
        "bibliography": [{"id": 7}, {"id": 8}, {"id": None, "title": "not in dataset"}, {"id": 55}],
    }
    row.update(changes)
    return row


def test_oarelatedwork_abstracts_layout():
    ex = parse_oarelatedwork_row(oarw_row())
    assert ex.target_id == "101" and ex.abstract == "We study summarisation. It works."
    assert [r.id for r in ex.references] == ["7", "8", "9"]
    assert ex.references[0].abstract == "A abstract one. Two." and ex.references[0].citations == ("8",)
    assert ex.gold_cited_ids == ("7", "8")  # index 2 has no id, index 3 is outside the pool
    assert ex.gold_related_work == "A did X. B and C did Y."


def test_oarelatedwork_default_layout_with_string_sections():
    row = oarw_row(related_work="First paragraph.\n\nSecond paragraph.", abstract="Plain abstract.")
    ex = parse_oarelatedwork_row(row)
    assert ex.gold_related_work == "First paragraph.\n\nSecond paragraph." and ex.abstract == "Plain abstract."
    assert ex.gold_cited_ids == ("7", "8", "9")  # no spans in this layout: all referenced papers


@pytest.mark.parametrize("change,field", [
    ({"abstract": []}, "abstract"),
    ({"title": ""}, "title"),
    ({"referenced": []}, "references"),
    ({"related_work": []}, "gold_related_work"),
    ({"referenced": [{"id": 7, "title": "", "hierarchy": []}]}, "references[0].title"),  # no abstract: by title
])
def test_malformed_oarelatedwork_rows_name_the_field(change, field):
    with pytest.raises(RecordError) as err:
        parse_oarelatedwork_row(oarw_row(**change))
    assert err.value.field == field and "'101'" in str(err.value)


def test_loader_counts_what_it_skips(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [oarw_row(), oarw_row(id=102, abstract=[]), oarw_row(id=103, referenced=[])]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n")
    examples, report = load_oarelatedwork(path)
    assert [e.target_id for e in examples] == ["101"]
    assert report.loaded == 1 and report.n_skipped == 3
    assert "abstract: is missing or empty" in str(report) and "not valid JSON" in str(report)
    assert report.notes["gold citations of papers not in the dataset"] == 1


def test_parquet_is_read_too(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "mn.parquet"
    pq.write_table(pa.Table.from_pylist([{"document": "a ||||| b", "summary": "– s"}]), path)
    (cluster,), report = load_multinews(path)
    assert cluster.documents == ("a", "b") and cluster.summary == "s"


def test_multinews_layouts():
    ex = parse_multinews_row({"document": "First. |||||  ||||| Second.", "summary": "– Both."}, 4)
    assert ex.documents == ("First.", "Second.") and ex.summary == "Both." and ex.id == "multinews-4"
    assert parse_multinews_row({"id": "9", "documents": ["x", "y"], "summary": "z"}).documents == ("x", "y")
    with pytest.raises(RecordError, match="'document'"):
        parse_multinews_row({"summary": "z"})


def test_long_document_layouts():
    original = {"article_id": "a1", "article_text": ["s1 .", "s2 ."], "abstract_text": ["<S> abs . </S>"],
                "section_names": ["intro", "method"], "sections": [["s1 ."], ["s2 ."]]}
    doc = parse_long_document_row(original, source="arxiv")
    assert doc.abstract == "abs ." and [s.name for s in doc.sections] == ["intro", "method"]
    flat = parse_long_document_row({"article": "x\ny", "abstract": "z"}, 3, "pubmed")
    assert flat.id == "pubmed-3" and flat.sections == ()
    with pytest.raises(RecordError, match="section_names"):
        parse_long_document_row({**original, "section_names": ["only one"]})


def test_offline_hub_loaders_fail_at_once_with_a_way_out(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for load, name in [(load_oarelatedwork, "BUT-FIT/OARelatedWork"), (load_multinews, "alexfabbri/multi_news"),
                       (lambda: load_long_documents("pubmed"), "ccdv/pubmed-summarization")]:
        t0 = time.perf_counter()
        with pytest.raises(DatasetUnavailableError, match=name) as err:
            load()
        assert time.perf_counter() - t0 < 1.0
        assert "path=" in str(err.value)


def test_missing_local_file():
    with pytest.raises(DatasetUnavailableError, match="does not exist"):
        load_multinews("/nonexistent/file.jsonl")


def test_validation_rejects_gold_outside_the_pool():
    ref = Reference("r1", "T", "A")
    with pytest.raises(RecordError, match="not in the reference pool"):
        RWGExample("t", "T", "A", (ref,), "gold", ("r2",)).validate()


# --------------------------------------------------------------------------- the bundled sample
def test_bundled_related_work_sample():
    examples, report = load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])
    assert report.n_skipped == 0 and len(examples) >= 10
    pool_papers = {r.id for ex in examples for r in ex.references}
    assert len(pool_papers) >= 50
    for ex in examples:
        words = len(ex.gold_related_work.split())
        assert 150 <= words <= 420, (ex.target_id, words)
        assert 6 <= len(ex.gold_cited_ids) <= 15
        assert len(ex.references) > len(ex.gold_cited_ids)  # distractors besides the gold citations
        assert "[" not in ex.gold_related_work  # authoring markers became author–year citations


def test_bundled_multinews_and_long_documents():
    clusters, report = load_multinews(SAMPLE_FILES["multinews"])
    assert report.n_skipped == 0 and len(clusters) >= 5
    assert all(2 <= len(c.documents) <= 4 for c in clusters)
    docs = []
    for name in ("arxiv", "pubmed"):
        loaded, report = load_long_documents(name, SAMPLE_FILES[name])
        assert report.n_skipped == 0
        docs += loaded
    assert len(docs) >= 5
    for doc in docs:
        assert len(doc.article.split()) >= 1500 and len(doc.sections) >= 4 and doc.abstract


def test_shipped_sample_equals_a_fresh_build():
    from crewlib.data.sample_build import build_all

    for task, text in build_all().items():
        shipped = SAMPLE_FILES[task].read_text(encoding="utf-8")
        assert shipped == text, f"{task} is stale: python -m crewlib.data.sample_build"


def test_sample_citation_spans_point_at_the_cited_paper():
    """Each span in the sample's related work covers 'Surname ..., year' of its bibliography entry."""
    rows = [json.loads(line) for line in SAMPLE_FILES["oarelatedwork"].read_text().splitlines()]
    checked = 0
    for row in rows:
        for section in row["related_work"]:
            for paragraph in section["paragraphs"]:
                for sentence in paragraph:
                    for cit in sentence["citations"]:
                        entry = row["bibliography"][cit["index"]]
                        label = sentence["text"][cit["start"]:cit["end"]]
                        assert label.startswith(entry["authors"][0].split()[-1]), (label, entry["title"])
                        assert label.endswith(str(entry["year"]))
                        checked += 1
    assert checked >= 12 * 6
