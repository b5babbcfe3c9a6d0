"""The three real sets read as evaluation examples (crewlib.eval.real_sets) and their golds written in system keys
(crewlib.eval.gold_keys). Every fixture here is invented text in the sets' real forms."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from crewlib.eval import EvalExample, EvalReference
from crewlib.eval.gold_keys import citation_pieces, fold_name, gold_cited_ids, keyed_gold, keyed_gold_counts
from crewlib.eval.real_sets import align_citation_names, read_hoang_kan, read_rwsgprv, read_strogens
from crewlib.experiments import discrimination


def _write(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------- Hoang & Kan
# Cited in reference-list order: by the first author's name as written, so "della rocca" sits under d (its citation
# name is "rocca 2006b"), and the two okafor works do not follow their years (2003 before 2001).
HK_CITED = [
    ("ranking answer passages with graph kernels",
     "we rank candidate answer passages for factoid questions with graph kernels over dependency parses ."),
    ("cross-lingual spelling correction for search queries",
     "we correct misspelled search queries in several languages with a noisy channel model of query logs ."),
    ("a corpus of annotated museum labels",
     "we release a corpus of museum exhibit labels annotated with readability levels for young visitors ."),
    ("tokenising agglutinative languages with finite state transducers",
     "we present finite state transducers that segment agglutinative words into morphemes ."),
    ("sentence compression for subtitles", "we compress spoken sentences into subtitles under a character budget ."),
    ("readability formulas for children 's books", "we test readability formulas on books written for children ."),
]
HK_GOLD = ("answer ranking has long relied on syntax. (adeyemi and kowalczyk 2005) rank answer passages with graph "
           "kernels over dependency parses. query processing is a related thread. (della rocca et al. 2006b);"
           "(quintero, 2004) correct misspelled queries with a noisy channel model and compress spoken sentences into "
           "subtitles. morphology matters for agglutinative languages. (okafor and lind 2001) segment agglutinative "
           "words into morphemes with finite state transducers. (okafor 2003) released museum labels annotated with "
           "readability levels. (stahl et al. 2007) tested readability formulas on children 's books.")


def _hoang_kan(gold: str = HK_GOLD, cited=HK_CITED, paper: str = "X01-1001") -> dict:
    return {"id": paper, "related_work": gold,
            "cited": [{"idx": i, "title": t, "abstract": a, "text": f"{t} . {a}"} for i, (t, a) in enumerate(cited)]}


def test_hoang_kan_names_align_to_the_works_by_written_first_word_and_text(tmp_path):
    [example] = read_hoang_kan(_write(tmp_path / "hk.jsonl", [_hoang_kan()]))
    ids = [r.ref_id for r in example.references]
    assert ids == [f"X01-1001:{i}" for i in range(6)] and example.target_title == ""
    assert dict(example.citation_names) == {
        "adeyemi 2005": ids[0], "rocca 2006b": ids[1], "okafor 2003": ids[2], "okafor 2001": ids[3],
        "quintero 2004": ids[4], "stahl 2007": ids[5]}  # the okafor tie decided by what each sentence says
    alignment = align_citation_names(example.gold, example.references)
    assert (alignment.tie_groups, alignment.tie_names, alignment.reordered, alignment.undecided) == (1, 2, 1, 0)
    text, unresolved, total = keyed_gold_counts(example)
    assert (unresolved, total) == (0, 6)
    assert text.startswith("answer ranking has long relied on syntax. [R1] rank answer passages")
    assert "related thread. [R2, R5] correct misspelled" in text
    assert "languages. [R4] segment" in text and "kernels" in text and "(" not in text
    assert example.gold_cited_ids == (ids[0], ids[1], ids[4], ids[3], ids[2], ids[5])  # in order of first citation


def test_hoang_kan_first_words_come_from_the_citation_as_written():
    pieces = citation_pieces("(della rocca et al. 2006b);(tjong kim sang and de meulder, 2003) and (okafor 2003)")
    assert [(p.works, p.first_words, p.group) for p in pieces] == [
        (("rocca 2006b",), ("della",), 0), (("sang 2003",), ("tjong",), 0),  # "(a);(b)": one citation
        (("okafor 2003",), ("okafor",), 1)]


def test_hoang_kan_counts_that_differ_align_nothing_and_say_so(tmp_path, caplog):
    gold = HK_GOLD + " (nakamura 1999) did it first."  # seven names for six works
    with caplog.at_level(logging.WARNING, logger="crewlib.eval.real_sets"):
        [example] = read_hoang_kan(_write(tmp_path / "hk.jsonl", [_hoang_kan(gold)]))
    assert example.citation_names == {} and example.gold_cited_ids == ()
    assert "the gold names 7 works and 6 are cited" in caplog.text and "line 1" in caplog.text
    text, unresolved, total = keyed_gold_counts(example)
    assert text == gold and unresolved == total == 7  # every citation left exactly as written, and counted


# ------------------------------------------------------------------------------------------------------- RWSG-PRV
RW_GOLD = ("Curriculum methods order training data by difficulty. Okafor et al. (2019) sort sentences by length "
           "before training a translation model. Brandt et al. (2018, 2020a) schedule examples by the loss of a "
           "teacher model. Difficulty can also be estimated from annotator disagreement (Brandt et al., 2020b). "
           "Other signals include word rarity (Lindqvist and Moreau, 2017; Tanaka et al., 2021) and syntactic depth "
           "(Müller et al., 2019). Early work on shaping (Ferreira, 2015) is related but untested on text. "
           "Okafor et al. (2019); Tanaka et al. (2021) agree that easy examples first help.")
RW_CITED = [  # not in the letters' order: Brandt 2020b comes first
    {"title": "Estimating example difficulty from annotator disagreement", "authors": ["Karl Brandt", "Ivo Sato"],
     "year": 2020, "abstract": ""},
    {"title": "Length-based curricula for neural machine translation", "authors": ["Ada Okafor", "Ben Ruiz"],
     "year": 2019, "abstract": "We sort training sentences by length before training a translation model."},
    {"title": "Teacher-guided curricula", "authors": ["Karl Brandt"], "year": "2018", "abstract": None},
    {"title": "Scheduling training examples by teacher loss", "authors": ["Karl Brandt", "Ivo Sato"], "year": 2020,
     "abstract": "A teacher model's loss orders the examples."},
    {"title": "Word rarity as difficulty", "authors": ["Eva Lindqvist", "Paul Moreau"], "year": 2017, "abstract": ""},
    {"title": "Rare words first or last?", "authors": ["Kenji Tanaka"], "year": 2021, "abstract": ""},
    {"title": "Syntactic depth curricula", "authors": ["Jana Müller", "Tom Berg"], "year": 2019, "abstract": ""},
]


def _rwsgprv(paper: str = "7", gold: str = RW_GOLD) -> dict:
    return {"id": paper, "title": "Curricula for translation", "abstract": "We order data.",
            "introduction": "Training order matters.", "related_work": gold, "cited": RW_CITED}


def test_rwsgprv_every_author_year_form_becomes_keys(tmp_path):
    [example] = read_rwsgprv(_write(tmp_path / "rw.jsonl", [_rwsgprv()]))
    assert (example.target_title, example.target_abstract, example.target_introduction) == (
        "Curricula for translation", "We order data.", "Training order matters.")
    refs = example.references
    assert [(r.ref_id, r.surname, r.year) for r in refs[:3]] == [("7:1", "Brandt", 2020), ("7:2", "Okafor", 2019),
                                                                 ("7:3", "Brandt", 2018)]
    assert refs[2].abstract == "" and refs[6].surname == "Müller" and example.default_keys["R7"] == "7:7"
    text, unresolved, total = keyed_gold_counts(example)
    assert "Okafor et al. [R2] sort sentences" in text  # narrative: names kept, the year parenthesis a key
    assert "Brandt et al. [R3, R4] schedule examples" in text  # two years; 2020a is the teacher-loss work
    assert "annotator disagreement [R1]." in text  # 2020b: the other Brandt 2020, told apart by the text
    assert "word rarity [R5, R6] and syntactic depth [R7]." in text  # several in one parenthesis; accents folded
    assert "Early work on shaping (Ferreira, 2015) is related" in text  # no such work: left exactly as written
    assert "Okafor et al. [R2]; Tanaka et al. [R6] agree" in text  # adjacent narrative citations
    assert (unresolved, total) == (1, 10)
    assert example.gold_cited_ids == ("7:2", "7:3", "7:4", "7:1", "7:5", "7:6", "7:7")
    assert keyed_gold(example) == (text, 1) and discrimination.keyed_gold is keyed_gold


def test_a_group_with_one_unresolved_work_is_left_whole():
    refs = (EvalReference("a", "Graph ranking", "", "Mihalcea", 2004),)
    example = EvalExample("t", "T", "A", "Ranking (Mihalcea and Tarau, 2004; Quist, 2001) works. Mihalcea and Tarau "
                          "(2004, 2005) too.", refs, (), "R", {"R1": "a"})
    text, unresolved, total = keyed_gold_counts(example)
    assert text == example.gold and (unresolved, total) == (2, 4)


def test_a_name_two_cited_works_share_resolves_citation_by_citation():
    refs = (EvalReference("p", "PEGASUS: gap sentences for abstractive summarization", "Pretraining for summaries.",
                          "Zhang", 2020),
            EvalReference("b", "BERTScore: evaluating text generation with BERT", "Contextual embeddings compare "
                          "candidate and reference tokens.", "Zhang", 2020),
            EvalReference("u", "An uncited Zhang paper on graphs", "Graphs.", "Zhang", 2020))
    gold = ("Metrics compare contextual embeddings of candidate and reference tokens (Zhang et al., 2020). Summaries "
            "come from abstractive pretraining with gap sentences (Zhang et al., 2020).")
    example = EvalExample("t", "T", "A", gold, refs, ("p", "b"), "R", {"R1": "p", "R2": "b", "R3": "u"})
    assert keyed_gold_counts(example) == ("Metrics compare contextual embeddings of candidate and reference tokens "
                                          "[R2]. Summaries come from abstractive pretraining with gap sentences [R1].",
                                          0, 2)


def test_a_name_the_library_takes_for_a_word_is_still_read():
    refs = (EvalReference("m", "Smoothing rarity", "", "May", 2016), EvalReference("s", "Pointers", "", "See", 2017))
    gold = "Rarity is smoothed (May and Oduya, 2016);(See et al., 2017). And (Lee, 2001; See et al., 2017)."
    example = EvalExample("t", "T", "A", gold, refs, (), "R", {"R1": "m", "R2": "s"})
    text, unresolved, total = keyed_gold_counts(example)
    assert text == "Rarity is smoothed [R1, R2]. And (Lee, 2001; See et al., 2017)." and (unresolved, total) == (1, 4)


def test_keys_and_numbers_stay_as_written_and_count_when_known():
    example = EvalExample.from_numbered("s", "Graphs [1] and trees [2-3]; lists [9].", [1, 2, 3])
    assert keyed_gold_counts(example) == (example.gold, 1, 4)
    keyed = EvalExample("k", "T", "A", "Done [R1, R2] and [R5].", (EvalReference("a"), EvalReference("b")), (),
                        "R", {"R1": "a", "R2": "b"})
    assert keyed_gold_counts(keyed) == (keyed.gold, 1, 3) and gold_cited_ids(keyed) == ("a", "b")


def test_citation_names_come_first_and_surnames_fold_as_citations_do():
    refs = (EvalReference("x", "Work", "", "", None), EvalReference("y", "Other", "", "Brandt", 2019))
    example = EvalExample("t", "T", "A", "as shown (brandt 2019a). also (brandt and roe, 2019a).", refs, (), "R",
                          {"R1": "x", "R2": "y"}, citation_names={"brandt 2019": "x"})
    assert keyed_gold_counts(example)[0] == "as shown [R1]. also [R1]."  # the name, its year's letter dropped
    assert [fold_name(n) for n in ("Müller", "Bouchard-Côté", "Tjong Kim Sang", "Popović")] == [
        "muller", "bouchard-cote", "sang", "popovic"]


# -------------------------------------------------------------------------------------------------------- STRoGeNS
def test_strogens_reads_numbered_golds_and_the_systems_outputs(tmp_path):
    records = [
        {"id": "11", "gold_related_work": "Graph methods [1] and trees [2-3] differ from lists [7].",
         "ref_numbers": [1, 2, 3], "system_outputs": {"pred": "Graphs [1].", "BART": "", "GPT": None}},
        {"id": 12, "gold_related_work": "Only [2].", "ref_numbers": "[1, 2]",
         "system_outputs": {"pred": "Trees [2].", "BART": " ", "GPT": "Lists [1]."}},
    ]
    examples, outputs = read_strogens(_write(tmp_path / "st.jsonl", records))
    assert [e.example_id for e in examples] == ["11", "12"] and examples[0].citation_style == "numeric"
    assert examples[0].gold_cited_ids == ("1", "2", "3") and [r.ref_id for r in examples[1].references] == ["1", "2"]
    assert outputs == {"pred": {"11": "Graphs [1].", "12": "Trees [2]."}, "GPT": {"12": "Lists [1]."}}
    assert keyed_gold_counts(examples[0]) == (examples[0].gold, 1, 4)


# -------------------------------------------------------------------------------------------------------- malformed
def _without(record: dict, *path: str) -> dict:
    record = json.loads(json.dumps(record))
    target = record
    for key in path[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    del target[path[-1]]
    return record


def _with(record: dict, value, *path: str) -> dict:
    record = json.loads(json.dumps(record))
    target = record
    for key in path[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[path[-1]] = value
    return record


STROGENS = {"id": "1", "gold_related_work": "A [1].", "ref_numbers": [1], "system_outputs": {"pred": "B [1]."}}
MALFORMED = [
    (read_hoang_kan, _without(_hoang_kan(), "related_work"), r"line 2: field 'related_work' is missing"),
    (read_hoang_kan, _with(_hoang_kan(), 5, "cited", "1", "title"),
     r"line 2: field 'cited\[1\]\.title' must be text, not a whole number"),
    (read_hoang_kan, _with(_hoang_kan(), {"a": 1}, "cited"), r"line 2: field 'cited' must be a list, not an object"),
    (read_rwsgprv, _without(_rwsgprv(), "introduction"), r"line 2: field 'introduction' is missing"),
    (read_rwsgprv, _with(_rwsgprv(), "Karl Brandt", "cited", "0", "authors"),
     r"line 2: field 'cited\[0\]\.authors' must be a list, not text"),
    (read_rwsgprv, _with(_rwsgprv(), 2019.5, "cited", "2", "year"), r"field 'cited\[2\]\.year' must be"),
    (read_rwsgprv, _with(_rwsgprv(), True, "id"), r"line 2: field 'id' must be text or a whole number"),
    (read_strogens, _with(STROGENS, "[1, 2", "ref_numbers"), r"line 2: field 'ref_numbers' holds text that is not"),
    (read_strogens, _with(STROGENS, ["x"], "ref_numbers"), r"line 2: field 'ref_numbers' must be a list of numbers"),
    (read_strogens, _with(STROGENS, 3, "system_outputs", "pred"), r"line 2: field 'system_outputs\.pred' must be text"),
    (read_strogens, _without(STROGENS, "system_outputs"), r"line 2: field 'system_outputs' is missing"),
]


@pytest.mark.parametrize(("read", "bad", "message"), MALFORMED)
def test_a_malformed_record_names_the_file_line_and_field(tmp_path, read, bad, message):
    good = {read_hoang_kan: _hoang_kan(paper="ok"), read_rwsgprv: _rwsgprv("ok"),
            read_strogens: _with(STROGENS, "ok", "id")}[read]
    path = _write(tmp_path / "set.jsonl", [good, bad])
    with pytest.raises(ValueError, match=message) as error:
        read(path)
    assert str(error.value).startswith(f"{path}, line 2: ")


@pytest.mark.parametrize("read", [read_hoang_kan, read_rwsgprv, lambda p: read_strogens(p)[0]])
def test_lines_that_are_not_records_or_repeat_an_id_are_errors(tmp_path, read):
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'a.jsonl'}, line 1: not a JSON record")):
        read(_write(tmp_path / "a.jsonl", ['{"id": "1", ']))
    with pytest.raises(ValueError, match="line 1: a record must be a JSON object, not list"):
        read(_write(tmp_path / "b.jsonl", [[1, 2]]))
    record = {"id": "1", "related_work": "", "gold_related_work": "", "cited": [], "title": "", "abstract": "",
              "introduction": "", "ref_numbers": [], "system_outputs": {}}
    with pytest.raises(ValueError, match="line 3: field 'id' repeats '1', the id of line 1"):
        read(_write(tmp_path / "c.jsonl", [record, "", record]))
