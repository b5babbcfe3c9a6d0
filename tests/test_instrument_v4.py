"""Instrument version 4 (issue 46): measures that mean what a reviewer means, the public ranking of two sections,
and the real-set measurement written to figures. Every text here is invented."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from crewlib.citations import is_lowercased
from crewlib.config import load_params
from crewlib.eval import EvalExample, EvalReference, Evaluator
from crewlib.eval.instrument import MEASURES, rank_sections
from crewlib.eval.section_measures import (
    citation_content,
    saturated_support,
    section_sentences,
    uncited_claims,
    voice_copies,
)
from crewlib.experiments import paired, real_discrimination

QUICK = load_params("quick")
REFS = (EvalReference("a", "Graph ranking for summarisation",
                      "We rank sentences by their centrality in a graph of lexical similarity between sentences."),
        EvalReference("b", "Neural extractive summarisation",
                      "We train a recurrent network that labels sentences for extraction from news articles."),
        EvalReference("c", "Pretrained document encoders",
                      "We pretrain a hierarchical encoder on unlabelled documents and fine-tune it to extract."))
PAPER = EvalExample("p1", "DocRank: ranking sentences with document context",
                    "We rank sentences for extractive summarisation with a pretrained document encoder.",
                    "", REFS, ("a", "b", "c"), "R", {"R1": "a", "R2": "b", "R3": "c"})
SOURCES = {k: PAPER.reference_by_id[i].text for k, i in PAPER.default_keys.items()}
HUMAN = ("Graph methods rank sentences by their centrality among similar sentences [R1], while neural extractors "
         "learn to label sentences from news articles [R2]. Pretrained encoders of whole documents improved both "
         "lines [R3].\n\nUnlike these works, our method ranks sentences with the context of the whole document, "
         "which lets the encoder of [R3] serve extraction directly.")
LISTED = "Several approaches have been proposed [R1, R2, R3]."


def test_the_papers_own_we_is_not_a_copied_voice_but_a_cited_abstract_in_first_person_is():
    copied = "We show that our model ranks sentences by their centrality in a graph of lexical similarity [R1]."
    assert voice_copies(HUMAN, SOURCES) == 0  # "Unlike these works, our method ..." positions the paper
    assert voice_copies(copied, SOURCES) == 1  # "our" inside a copied abstract sentence still copies it
    assert voice_copies("We rank sentences by centrality in a lexical similarity graph.", SOURCES) == 1  # uncited


def test_uncited_claims_leave_the_papers_positioning_out_and_read_every_citation_form():
    title = PAPER.target_title
    assert uncited_claims("Our method reaches 41.2 ROUGE-1 on CNN/DailyMail.", title) == 0  # the paper's own claim
    assert uncited_claims("LexRank reaches 41.2 ROUGE-1 on CNN/DailyMail.", title) == 1
    assert uncited_claims("LexRank reaches 41.2 ROUGE-1 (Erkan and Radev, 2004).", title) == 0  # author-year cites


def test_support_saturates_so_a_near_copy_scores_what_a_paraphrase_at_the_threshold_scores():
    assert saturated_support([0.5, 1.0], 0.5) == saturated_support([0.5, 0.5], 0.5) == 1.0
    assert saturated_support([0.25], 0.5) == 0.5 and saturated_support([], 0.5) == 0.0


def test_citation_content_tells_a_list_of_citations_from_sentences_about_the_works():
    assert citation_content(LISTED, 6) == pytest.approx(4 / 3 / 6)  # four content words for three works
    assert citation_content(HUMAN, 6) == 1.0 and citation_content("No citation here.", 6) is None


def test_a_lowercased_section_keyed_with_system_keys_is_still_split_at_its_stops():
    text = "graph methods rank sentences [R1]. neural extractors label them [R2]. we go further."
    assert is_lowercased(text) and not is_lowercased("Graph methods [R1].")
    assert len(section_sentences(text)) == 3


def test_text_only_measures_are_computed_where_the_works_have_no_text():
    bare = EvalExample("p2", "", "", "", (EvalReference("1"), EvalReference("2")), ("1", "2"), "numeric",
                       {"1": "1", "2": "2"})
    text = "Graph methods rank sentences [1]. They use similarity [2].\n\nNeural models label sentences [2]."
    scores = Evaluator(QUICK).score([{"system": "s", "example": "p2", "text": text}], [bare],
                                    metrics=["grounding", "relating"], progress=False)
    have = set(scores.metric)
    assert {"coherence", "paragraphing", "truncated", "repeated_sentences_rate", "uncited_claims_rate",
            "citation_content", "positioning_any"} <= have
    assert "support" not in have and "first_person_rate" not in have  # they need the works' texts


def test_every_version_4_measure_is_weighted_in_quick():
    weights = QUICK.instrument.weights
    assert {"positioning", "positioning_any", "synthesis", "theme_coherence", "citation_content"} <= set(weights)
    assert set(weights) <= set(MEASURES) and all(w == 1 for m, w in weights.items() if m != "claim_support")


def test_rank_sections_puts_a_related_section_above_a_list_of_its_citations():
    first = rank_sections(QUICK, PAPER, HUMAN, LISTED)
    second = rank_sections(QUICK, PAPER, LISTED, HUMAN)
    assert first.verdict == 1 and second.verdict == -1 and first.delta == pytest.approx(-second.delta)
    assert first.measures["citation_content"] > 0 and first.preference is None  # no judge: the offline composite
    assert rank_sections(QUICK, PAPER, HUMAN, HUMAN).verdict == 0


def _real_sets(tmp_path):
    hk = [{"id": f"H{i}", "related_work": (
        "graph methods rank sentences by centrality (erkan and radev 2004). neural extractors label sentences from "
        "news (cheng and lapata 2016). pretrained encoders of documents help both (zhang et al. 2019). unlike these "
        f"works, we rank sentences with the whole document {i}."),
        "cited": [{"idx": 0, "title": "graph ranking", "abstract": "we rank sentences by centrality in a graph .",
                   "text": "graph ranking . we rank sentences by centrality in a graph ."},
                  {"idx": 1, "title": "neural extraction", "abstract": "we label sentences from news with a network .",
                   "text": "neural extraction . we label sentences from news with a network ."},
                  {"idx": 2, "title": "document encoders", "abstract": "we pretrain encoders of whole documents .",
                   "text": "document encoders . we pretrain encoders of whole documents ."}]} for i in range(3)]
    path = tmp_path / "hk.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in hk), encoding="utf-8")
    return path


def test_the_real_set_measurement_writes_its_tables_and_notebook_05_reads_them(tmp_path, capsys):
    figures = tmp_path / "figures"
    figures.mkdir()
    assert real_discrimination.measured(figures) is None  # never measured: nothing to show, never an error
    code = real_discrimination.main(["--hoang-kan", str(_real_sets(tmp_path)), "--figures", str(figures)])
    assert code == 0 and "unresolved_share" in capsys.readouterr().out
    sets = real_discrimination.measured_sets(figures)
    assert sets.iloc[0].to_dict() == {"papers": "real: Hoang & Kan", "golds": 3, "citations": 9, "unresolved": 0,
                                      "unresolved_share": 0.0}
    table = real_discrimination.measured(figures)
    assert set(table.papers) == {"real: Hoang & Kan"} and (table.judge == real_discrimination.JUDGE).all()
    assert {"works_listed", "positioning_removed", "annotated_bibliography"} <= set(table.damage)
    view = real_discrimination.composite_view(table)
    assert list(view.columns[:3]) == ["pairs", "all damages", "worst"] and view.pairs.iloc[0] > 0


def test_a_paired_conclusion_reads_the_real_sets_where_they_measured_its_instrument():
    sample = pd.DataFrame([{"papers": "holdout", "instrument": "composite without the LLM", "damage": "d",
                            "pairs": 10, "correct": 1.0, "ties": 0.0, "judge": "j"}])
    real = sample.assign(papers="real: STRoGeNS", correct=0.6, pairs=100, judge=real_discrimination.JUDGE)
    basis = paired.discrimination_basis(pd.concat([sample, real], ignore_index=True))
    assert set(basis.papers) == {"real: STRoGeNS"}  # the sample's held-out rows give way to the real ones
    table = pd.DataFrame([{"papers": 5, "CREW better": 3, "CREW worse": 2, "sign test p": 1.0,
                           "instrument": "composite without the LLM"}], index=["srw"])
    sentence = paired.conclusion(table, basis)
    assert "human-written sections no one here wrote" in sentence and "60%" in sentence
    with_llm = table.assign(instrument="composite")  # the composite with its LLM parts reads the offline part there
    assert "its part without the LLM" in paired.conclusion(with_llm, basis) and "60%" in sentence
