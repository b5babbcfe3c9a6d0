"""``crew write`` reads the user's files as researchers write them: BibTeX ``@string`` macros, ``#`` and
``crossref``, braced corporate authors, JSON fields that are not text, several ``.bib`` files, ``comment``
blocks, ``\\input`` without braces and an introduction that is not a section named Introduction."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from crewlib.write import LatexPaperError, ReferenceFileError, author_names, read_latex_paper, read_references
from crewlib.write.command import load_inputs
from crewlib.write.reference_files import bibtex_entries, references_from_bibtex

PAPER = ("\\documentclass{article}\n\\title{Graph Agents}\n\\begin{document}\n"
         "\\begin{abstract}Agents write with graphs.\\end{abstract}\n")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _args(**given) -> argparse.Namespace:
    """The arguments ``load_inputs`` reads, as ``crew write`` parses them (None where not given)."""
    names = ("tex", "title", "abstract", "introduction", "bib", "references")
    return argparse.Namespace(**{name: given.get(name) for name in names})


# ----------------------------------------------------------------------------- BibTeX habits
def test_string_macros_with_concatenation_and_months_are_resolved():
    text = ('@string{acl = "Proceedings of ACL"}\n@STRING{ aclx = acl # { (Long Papers)} }\n'
            '@inproceedings{a, title = {Parsing at } # acl, booktitle = aclx # " 2020", month = jan, year = 2020,\n'
            '  abstract = "We parse " # {C# code} # " for " # ACL # "."}\n')
    (entry,), problems = bibtex_entries([("", text)])
    assert problems == []
    assert entry.fields["booktitle"] == "Proceedings of ACL (Long Papers) 2020" and entry.fields["month"] == "January"
    reference = references_from_bibtex(text).references[0]
    assert reference.title == "Parsing at Proceedings of ACL"
    assert reference.abstract == "We parse C# code for Proceedings of ACL."


def test_an_undefined_macro_in_a_title_is_an_error_naming_the_entry_and_the_macro():
    with pytest.raises(ReferenceFileError, match=r"entry 'a': its field 'title' uses the macro 'nips'"):
        references_from_bibtex("@misc{a, title = {Graphs at } # nips, abstract = {X.}}\n")


def test_crossref_fields_are_inherited_and_the_proceedings_is_not_a_reference():
    text = ("@inproceedings{a, crossref = {proc20}, title = {Agents Write}, author = {Doe, Jane}, abstract = {X.}}\n"
            "@proceedings{proc20, title = {Proceedings of ACL 2020}, year = {2020}, editor = {Roe, Tom}}\n"
            "@inproceedings{b, crossref = {PROC20}, title = {Graphs Read}, year = {2021}, booktitle = {Own}}\n")
    entries, _ = bibtex_entries([("", text)])
    by_key = {e.key: e for e in entries}
    assert set(by_key) == {"a", "b"}  # the volume is not a work the paper cites
    assert by_key["a"].fields["booktitle"] == "Proceedings of ACL 2020" and by_key["a"].fields["year"] == "2020"
    assert by_key["a"].fields["title"] == "Agents Write" and "abstract" not in by_key["b"].fields
    assert by_key["b"].fields["year"] == "2021" and by_key["b"].fields["booktitle"] == "Own"  # its own win
    refs = references_from_bibtex(text)
    assert [(r.id, r.year) for r in refs.references] == [("a", 2020), ("b", 2021)]


def test_a_crossref_to_a_missing_entry_is_named():
    with pytest.raises(ReferenceFileError, match=r"entry 'a': its crossref 'proc99' names no entry"):
        references_from_bibtex("@inproceedings{a, crossref = {proc99}, title = {T}}\n")


def test_braced_corporate_authors_are_one_author_each():
    text = ("@misc{who, title = {Report}, author = {{World Health Organization} and {Barnes and Noble} and "
            "Smith, Ann AND M{\\\"u}ller, Bo}}\n")
    (reference,) = references_from_bibtex(text).references
    assert reference.authors == ("World Health Organization,", "Barnes and Noble,", "Smith, Ann", "Müller, Bo")
    assert author_names(reference.authors[:1]) == "World Health Organization"  # whole in the list, not "Organization"


# ----------------------------------------------------------------------------- JSON fields that are not text
@pytest.mark.parametrize(("name", "rows", "message"), [
    ("r.json", [{"key": "a", "title": {"en": "X"}, "abstract": "Y"}], r"entry 'a': its field 'title' holds an object"),
    ("r.jsonl", [{"id": "b", "title": "T", "abstract": ["a", "b"]}], r"entry 'b': its field 'abstract' holds a list"),
    ("r.json", [{"key": "c", "title": "T", "authors": [{"family": "Doe"}]}], r"entry 'c': its field 'authors'"),
    ("r.json", [{"key": ["d"], "title": "T"}], r"row 1: its field 'key' holds a list"),
])
def test_a_json_field_that_is_not_text_is_refused_naming_the_entry_and_field(tmp_path, name, rows, message):
    text = "\n".join(json.dumps(r) for r in rows) if name.endswith("l") else json.dumps(rows)
    with pytest.raises(ReferenceFileError, match=message):
        read_references(_write(tmp_path, name, text))


def test_json_lists_of_authors_and_numbers_are_still_fine(tmp_path):
    rows = [{"id": 7, "title": "T", "abstract": "A.", "authors": ["Doe, Jane", "Roe, Tom"], "year": 2020}]
    (reference,) = read_references(_write(tmp_path, "r.json", json.dumps(rows))).references
    assert (reference.id, reference.authors, reference.year) == ("7", ("Doe, Jane", "Roe, Tom"), 2020)


# ----------------------------------------------------------------------------- several .bib files
def _two_bibs(folder: Path) -> None:
    _write(folder, "strings.bib", '@string{acl = "Proceedings of ACL"}\n'
                                  "@misc{a, title = {Graphs}, abstract = {About graphs.}, booktitle = acl}\n")
    _write(folder, "refs.bib", "@misc{b, title = {Agents at } # acl, abstract = {About agents.}}\n")


@pytest.mark.parametrize("command", ["\\bibliography{strings,refs}",
                                     "\\addbibresource{strings.bib}\n\\addbibresource{refs.bib}"])
def test_every_named_bib_file_is_read(tmp_path, command):
    _two_bibs(tmp_path)
    tex = _write(tmp_path, "main.tex", PAPER + f"\\section{{Introduction}} Hello.\n{command}\n\\end{{document}}\n")
    paper = read_latex_paper(tex)
    assert paper.bibs == ((tmp_path / "strings.bib").resolve(), (tmp_path / "refs.bib").resolve())
    assert paper.bib == paper.bibs[0]
    _, _, _, refs = load_inputs(_args(tex=str(tex)))
    assert [(r.id, r.title) for r in refs.references] == [("a", "Graphs"), ("b", "Agents at Proceedings of ACL")]


def test_a_missing_bib_file_among_several_is_named(tmp_path):
    _two_bibs(tmp_path)
    tex = _write(tmp_path, "main.tex", PAPER + "\\section{Introduction} Hi.\n\\bibliography{strings,gone}\n")
    with pytest.raises(LatexPaperError, match=r"gone\.bib"):
        read_latex_paper(tex)
    assert read_latex_paper(tex, need_bib=False).bibs == ((tmp_path / "strings.bib").resolve(),)


def test_a_key_repeated_across_bib_files_names_the_key_and_both_files(tmp_path):
    _write(tmp_path, "one.bib", "@misc{a, title = {One}}\n")
    _write(tmp_path, "two.bib", "@misc{z, title = {Zed}}\n@misc{a, title = {Two}}\n")
    tex = _write(tmp_path, "main.tex", PAPER + "\\section{Introduction} Hi.\n\\bibliography{one,two}\n")
    with pytest.raises(ReferenceFileError) as error:
        load_inputs(_args(tex=str(tex)))
    assert "entry 'a'" in str(error.value) and "one.bib" in str(error.value) and "two.bib line 2" in str(error.value)


# ----------------------------------------------------------------------------- LaTeX habits
def test_comment_blocks_are_dropped_before_anything_is_read(tmp_path):
    _write(tmp_path, "refs.bib", "@misc{a, title = {T}}\n")
    tex = _write(tmp_path, "main.tex", PAPER + "\\begin{comment}\n\\section{Introduction} An old draft.\n"
                 "\\input{missing}\n\\end{comment}\n\\section{Introduction} The real one.\n\\bibliography{refs}\n")
    assert read_latex_paper(tex).introduction == "The real one."


def test_input_without_braces_is_followed(tmp_path):
    _write(tmp_path, "refs.bib", "@misc{a, title = {T}}\n")
    _write(tmp_path, "intro.tex", "\\section{Introduction} From a file without braces.\n")
    _write(tmp_path, "parts/more.tex", "Included too.\n")
    tex = _write(tmp_path, "main.tex", PAPER + "\\input intro\n\\include{parts/more}\n\\section{Method} M.\n"
                 "\\bibliography{refs}\n")
    assert read_latex_paper(tex).introduction == "From a file without braces. Included too."


def test_a_paper_without_an_introduction_section_takes_introduction_argument(tmp_path):
    _write(tmp_path, "refs.bib", "@misc{a, title = {T}, abstract = {X.}}\n")
    tex = _write(tmp_path, "main.tex", PAPER + "\\section{Motivation} Why.\n\\bibliography{refs}\n")
    with pytest.raises(LatexPaperError, match=r"Introduction.*--introduction"):
        load_inputs(_args(tex=str(tex)))
    assert read_latex_paper(tex, need_introduction=False).introduction == ""
    title, abstract, introduction, refs = load_inputs(_args(tex=str(tex), introduction="We start here."))
    assert (title, abstract, introduction) == ("Graph Agents", "Agents write with graphs.", "We start here.")
    assert [r.id for r in refs.references] == ["a"]
