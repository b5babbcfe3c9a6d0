"""``crew write``: reference files (BibTeX, CSV, JSON, JSONL) and their bad inputs, Markdown and LaTeX, the command,
and the local-data loaders' simple layout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crewlib.config import PROJECT_ROOT, load_params
from crewlib.data.loaders import load_oarelatedwork
from crewlib.write import (
    ReferenceFileError,
    author_names,
    own_example,
    read_references,
    resolve_markers,
    to_latex,
    to_markdown,
    write_related_work,
)

EXAMPLE = PROJECT_ROOT / "examples"
CREW = [sys.executable, "-m", "crewlib.cli"]  # this checkout's crewlib (PYTHONPATH), as the console script runs it
CREW_ENV = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "HF_HUB_OFFLINE": "1"}
BIB = """% a comment
@article{smith2020, title={Graph {Neural} Networks for M{\\"u}ller's Data}, author={Smith, Ann and Lee, Bo},
  year={2020}, abstract={We recommend citations with {GNNs}.}}
@inproceedings{doe2021, title = "Agents that Write", author = {Jane Doe and Tom Roe and Al Poe}, year = 2021,
  abstract = {Several agents cooperate.}}
@misc{roe2019, title={Title Only \\& Nothing Else}, year={2019}}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_bibtex_entries_become_references_with_latex_decoded_and_title_only_ones_counted(tmp_path):
    refs = read_references(_write(tmp_path, "refs.bib", BIB))
    by_key = {r.id: r for r in refs.references}
    assert list(by_key) == ["smith2020", "doe2021", "roe2019"]
    assert by_key["smith2020"].title == "Graph Neural Networks for Müller's Data"
    assert by_key["smith2020"].abstract == "We recommend citations with GNNs."
    assert by_key["smith2020"].authors == ("Smith, Ann", "Lee, Bo") and by_key["doe2021"].year == 2021
    assert by_key["roe2019"].abstract == by_key["roe2019"].title == "Title Only & Nothing Else"  # used by its title
    assert refs.title_only == ["roe2019"] and "1 without an abstract, used by their title: roe2019" in refs.report()


def test_csv_json_and_jsonl_give_the_same_references_as_bibtex(tmp_path):
    rows = [{"key": "smith2020", "title": "Graph Networks", "abstract": "GNNs.", "authors": "Smith, Ann and Lee, Bo",
             "year": "2020"},
            {"key": "roe2019", "title": "Title Only", "abstract": "", "authors": "", "year": ""}]
    header = "key,title,abstract,authors,year\n"
    csv_text = header + "".join(f'{r["key"]},"{r["title"]}","{r["abstract"]}","{r["authors"]}",{r["year"]}\n'
                                for r in rows)
    files = [_write(tmp_path, "r.csv", csv_text), _write(tmp_path, "r.json", json.dumps(rows)),
             _write(tmp_path, "r.jsonl", "\n".join(json.dumps(r) for r in rows)),
             _write(tmp_path, "o.json", json.dumps({"references": rows}))]
    parsed = [read_references(f) for f in files]
    for refs in parsed:
        assert [(r.id, r.title, r.abstract, r.authors, r.year) for r in refs.references] == [
            ("smith2020", "Graph Networks", "GNNs.", ("Smith, Ann", "Lee, Bo"), 2020),
            ("roe2019", "Title Only", "Title Only", (), None)]
        assert refs.title_only == ["roe2019"]
    shipped = read_references(EXAMPLE / "crew_paper.bib")
    assert [r.id for r in read_references(EXAMPLE / "crew_paper_references.csv").references] == [
        r.id for r in shipped.references]
    assert 10 <= len(shipped.references) <= 15 and shipped.title_only


@pytest.mark.parametrize("name, text, message", [
    ("dup.bib", "@misc{a, title={One}}\n@misc{a, title={Two}}\n", r"entry 'a' \(line 2\): repeats the key"),
    ("bad.bib", "@misc{a, title={One}}\n@article{broken, title={no closing\n@misc{c, title={Three}}\n",
     r"unparsable entry at line 2: '@article\{broken"),
    ("empty.bib", "  \n", r"empty\.bib is empty"),
    ("nothing.bib", "% only a comment\n", r"holds no BibTeX entry"),
    ("notitle.bib", "@misc{a, author={X}}\n@misc{b, year={2020}}\n", r"2 bad entries:\n  entry 'a': has no title"),
    ("dup.csv", "key,title\na,One\na,Two\n", r"entry 'a': repeats the key"),
    ("nokey.csv", "key,title\n,One\n", r"row 1: has no key"),
    ("header.csv", "name,abstract\nx,y\n", r"needs a header with key and title"),
    ("bad.jsonl", '{"key": "a", "title": "One"}\nnot json\n', r"line 2: is not valid JSON"),
    ("bad.json", "[1, 2", r"is not valid JSON"),
    ("refs.txt", "a", r"unknown references format '\.txt'"),
])
def test_bad_reference_files_are_clear_errors_naming_the_entry(tmp_path, name, text, message):
    with pytest.raises(ReferenceFileError, match=message):
        read_references(_write(tmp_path, name, text))


def test_a_missing_references_file_or_target_field_is_a_clear_error(tmp_path):
    with pytest.raises(ReferenceFileError, match="does not exist"):
        read_references(tmp_path / "none.bib")
    refs = read_references(_write(tmp_path, "refs.bib", BIB)).references
    with pytest.raises(ValueError, match="needs an abstract"):
        own_example("A title", "  ", refs)
    with pytest.raises(ValueError, match="needs a title"):
        own_example("", "An abstract.", refs)
    with pytest.raises(ValueError, match="reference pool has no papers"):
        own_example("A title", "An abstract.", [])


def test_markers_resolve_to_the_bibtex_keys_in_markdown_and_latex(tmp_path):
    refs = read_references(_write(tmp_path, "refs.bib", BIB)).references
    example = own_example("My Paper", "We study agents.", refs)
    key_to_id = {"R1": "smith2020", "R2": "doe2021", "R3": "roe2019"}
    text = ("## Graphs\n\nGNNs help 50% of users & more [R1, R2]. Titles alone_exist [R3].\n\n"
            "An unknown key [R9] and **bold** text.")
    markdown = to_markdown(example, text, key_to_id)
    assert "GNNs help 50% of users & more [smith2020; doe2021]. Titles alone_exist [roe2019]." in markdown
    assert "- [doe2021] Doe et al. (2021). Agents that Write." in markdown
    assert "- [smith2020] Smith and Lee (2020). Graph Neural Networks for Müller's Data." in markdown
    latex = to_latex(example, text, key_to_id)
    assert r"GNNs help 50\% of users \& more \cite{smith2020,doe2021}. Titles alone\_exist \cite{roe2019}." in latex
    assert r"\paragraph{Graphs}" in latex and "An unknown key [?] and bold text." in latex
    assert resolve_markers("x [R9] [R1]", key_to_id, lambda ids: "+".join(ids)) == ("x [?] smith2020", ["R9"])
    assert author_names(["Ann Smith"]) == "Smith"


def test_the_introduction_reaches_the_target_text_every_system_reads(tmp_path):
    refs = read_references(_write(tmp_path, "refs.bib", BIB)).references
    plain = own_example("My Paper", "We study agents.", refs)
    with_intro = own_example("My Paper", "We study agents.", refs, introduction="Agents write. " * 400)
    assert with_intro.abstract.startswith("We study agents.\n\nFrom the introduction: Agents write.")
    assert len(with_intro.abstract.split()) < 320 and with_intro.abstract.endswith("…")
    assert plain.target_id != with_intro.target_id  # cached features never mix two papers


def test_crew_write_with_the_extractive_system_writes_markdown_and_latex_citing_only_bib_keys(tmp_path):
    out = tmp_path / "out"
    command = [*CREW, "write",
               "--title", str(EXAMPLE / "crew_paper_title.txt"), "--abstract", str(EXAMPLE / "crew_paper_abstract.txt"),
               "--bib", str(EXAMPLE / "crew_paper.bib"), "--system", "extractive", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=CREW_ENV)
    assert done.returncode == 0, done.stderr
    bib_keys = set(re.findall(r"@\w+\{([^,\s]+),", (EXAMPLE / "crew_paper.bib").read_text()))
    latex = (out / "related_work.tex").read_text()
    cited = {k for group in re.findall(r"\\cite\{([^}]*)\}", latex) for k in group.split(",")}
    assert cited and cited <= bib_keys
    markdown = (out / "related_work.md").read_text()
    assert not re.search(r"\[R\d+", markdown) and "## References" in markdown
    summary = json.loads((out / "summary.json").read_text())
    assert summary["calls"] == 0 and summary["citation_verification"] == 1.0 and summary["references_title_only"] == 3
    assert "has no abstract; it is used by its title" in done.stderr
    assert "extractive: 0 LLM calls" in done.stdout and (out / "trace.json").exists()
    assert "extractive rounds" in done.stderr  # the progress bar, per round


def test_crew_write_reports_bad_input_as_an_error_not_a_traceback(tmp_path):
    bad = _write(tmp_path, "dup.bib", "@misc{a, title={One}}\n@misc{a, title={Two}}\n")
    done = subprocess.run([*CREW, "write", "--title", "T", "--abstract", "A",
                           "--bib", str(bad), "--system", "extractive", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120, env=CREW_ENV)
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    help_text = subprocess.run([str(Path(sys.executable).parent / "crew"), "write", "--help"], capture_output=True,
                               text=True, timeout=60).stdout
    assert "--bib" in help_text and "--system" in help_text and "--api-key-env" in help_text


def test_write_related_work_counts_rounds_and_rejects_rounds_for_a_one_prompt_system(tmp_path):
    params = load_params("quick")
    refs = read_references(EXAMPLE / "crew_paper.bib")
    result = write_related_work("T", "Agents write related work.", refs, params=params, system="extractive",
                                rounds=4, out=tmp_path / "o")
    assert result.summary["rounds"] == 4 and (tmp_path / "o" / "related_work.tex").exists()
    with pytest.raises(ValueError, match="plays no rounds"):
        write_related_work("T", "A.", refs, params=params, system="long_context", rounds=3, out=tmp_path / "p")


@pytest.mark.llm
def test_crew_write_with_crew_on_the_embedded_model(tmp_path):
    from crewlib.write import references_from_rows

    params = load_params("quick", {"llm": {"cache_dir": str(tmp_path / "cache")}})
    refs = read_references(EXAMPLE / "crew_paper.bib")
    few = references_from_rows([{"key": r.id, "title": r.title, "abstract": r.abstract} for r in refs.references[:6]])
    result = write_related_work("CREW", (EXAMPLE / "crew_paper_abstract.txt").read_text(), few, params=params,
                                rounds=3, out=tmp_path / "o")
    assert result.summary["calls"] > 0 and result.summary["model"]
    latex = (tmp_path / "o" / "related_work.tex").read_text()
    cited = {k for group in re.findall(r"\\cite\{([^}]*)\}", latex) for k in group.split(",")}
    assert cited <= {r.id for r in few.references}
    assert (tmp_path / "o" / "ledger.csv").exists() and (tmp_path / "o" / "trace.json").exists()


# ----------------------------------------------------------------------------- the simple local layout
def _simple_row(**changes) -> dict:
    row = {"id": "p1", "title": "My Paper", "abstract": "We study agents that write.",
           "references": [{"key": "smith2020", "title": "Graph Networks", "abstract": "GNNs.", "year": 2020},
                          {"key": "roe2019", "title": "Title Only"}],
           "related_work": "Graphs help [smith2020].\nTitles alone \\cite{roe2019} too."}
    row.update(changes)
    return row


def test_the_simple_layout_loads_with_title_only_references_kept_and_single_newline_paragraphs(tmp_path):
    path = _write(tmp_path, "mine.jsonl", json.dumps(_simple_row()) + "\n")
    (example,), report = load_oarelatedwork(path)
    assert example.target_id == "p1" and [r.id for r in example.references] == ["smith2020", "roe2019"]
    assert example.references[1].abstract == "Title Only"
    assert report.notes["references without an abstract, used by their title"] == 1
    assert example.gold_related_work == "Graphs help [smith2020].\n\nTitles alone \\cite{roe2019} too."
    assert example.gold_cited_ids == ("smith2020", "roe2019")
    (plain,), _ = load_oarelatedwork(_write(tmp_path, "p.jsonl", json.dumps(_simple_row(related_work="No keys."))))
    assert plain.gold_cited_ids == ("smith2020", "roe2019")  # every reference, noted


def test_the_load_report_counts_every_bad_field_not_only_the_first_of_a_paper(tmp_path):
    bad = _simple_row(id="p2", abstract="", references=[{"title": "No key"}, {"key": "k", "title": ""},
                                                         {"key": "k2", "title": "Fine"}])
    rows = [_simple_row(), bad]
    records, report = load_oarelatedwork(_write(tmp_path, "mine.jsonl", "\n".join(json.dumps(r) for r in rows)))
    assert [r.target_id for r in records] == ["p1"] and report.n_skipped == 1
    assert report.skipped["references[].key: is missing"] == 1
    assert report.skipped["references[].title: is missing or empty"] == 1
    assert report.skipped["abstract: is missing or empty"] == 1
    assert "skipped 1 (bad fields: " in str(report)


def test_an_oarelatedwork_reference_without_an_abstract_is_kept_with_its_title(tmp_path):
    from crewlib.data.loaders import SAMPLE_FILES

    row = json.loads(SAMPLE_FILES["oarelatedwork"].read_text().splitlines()[0])
    for ref in row["referenced"][:2]:
        ref.pop("abstract", None)
        ref.pop("hierarchy", None)
    (example,), report = load_oarelatedwork(_write(tmp_path, "oa.jsonl", json.dumps(row)))
    assert report.n_skipped == 0 and report.notes["references without an abstract, used by their title"] == 2
    assert example.references[0].abstract == example.references[0].title


def test_target_ids_pick_the_papers_to_run():
    from crewlib.data import DatasetUnavailableError
    from crewlib.tasks import build_tasks

    everything = build_tasks(load_params("quick"))
    picked = [e.target_id for e, _ in everything.train][:2]
    chosen = build_tasks(load_params("quick", {"data": {"target_ids": picked}}))
    assert [e.target_id for e, _ in chosen.evaluation] == picked and not set(picked) & set(chosen.train_ids)
    with pytest.raises(DatasetUnavailableError, match=r"target_ids names targets the data does not hold: \['nope'\]"):
        build_tasks(load_params("quick", {"data": {"target_ids": ["nope"]}}))


def test_crew_write_plays_rounds_that_fit_the_pool_and_validates_rounds(tmp_path):
    import argparse

    from crewlib.baselines.env_systems import auto_rounds
    from crewlib.data.records import Reference
    from crewlib.tasks import build_tasks
    from crewlib.write import own_example
    from crewlib.write.command import _rounds

    quick = load_params("quick")
    refs = [Reference(f"k{i}", f"Work {i} on graphs", f"Work {i} on graphs" if i >= 8 else f"Graph method {i} learns.")
            for i in range(15)]
    example = own_example("T", "Graphs.", refs, "")
    task = build_tasks(quick, [example], min_connections=0).tasks[example.target_id]
    assert auto_rounds(task, 3, 15) == 8  # 8 works with an abstract: ceil(2.5 * 8 / 3) + 1
    assert auto_rounds(task, 3, 5) == 5 and auto_rounds(task, 30, 15) == 2
    assert _rounds("auto") == "auto" and _rounds("4") == 4
    for bad in ("0", "-1", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="rounds"):
            _rounds(bad)
    for too_few in (0, 3):  # extractive composes in its 4th round
        with pytest.raises(ValueError, match="fewer than 4 rounds"):
            write_related_work("T", "A.", refs, params=quick, system="extractive", rounds=too_few, out=tmp_path / "o")
    assert not (tmp_path / "o").exists()  # refused before any work
