"""Relating measures (crewlib.eval.relating): a related-work section versus an annotated bibliography."""

import pytest

from crewlib.citations import citation_groups
from crewlib.eval.relating import (
    MEASURES,
    content_per_citation,
    positioning,
    positioning_any,
    relating_scores,
    section_paragraphs,
    split_sentences,
    synthesis,
    theme_coherence,
)

THRESHOLD = 0.5
UNIT = 5  # eval.paragraph_sentences: a reading unit's sentences
TITLE = "Cooperating agents for related-work sections"
PAPER = ("We present a system that generates related-work sections with cooperating language model agents that cite "
         "every claim. The agents select, compare and group prior work.")
WORKS = {
    "R1": "LexRank: graph-based lexical centrality for extractive summarisation. We select salient sentences from the "
          "source document by graph centrality.",
    "R2": "SummaRuNNer: supervised sentence scoring for extractive summarisation of documents. A recurrent network "
          "scores salient sentences of the source document.",
    "R3": "Abstractive summarisation with attentional encoder-decoder networks. The model rewrites the source document "
          "with attention over its words.",
    "R4": "Proximal policy optimization algorithms. Policy gradient reinforcement learning with clipped surrogate "
          "objectives trains agents in simulated control environments.",
    "R5": "Multi-agent reinforcement learning with centralised critics. Cooperative agents learn decentralised "
          "policies from a shared reward in simulated environments.",
    "R6": "Independent learners in cooperative multi-agent games. Each agent runs policy gradient reinforcement "
          "learning on its own reward in simulated environments.",
}

THEMED = ("Extractive summarisation selects salient sentences from the source document using graph centrality [R1] "
          "or supervised sentence scoring [R2], whereas abstractive summarisation rewrites the source document with "
          "attentional encoder-decoder networks [R3]. Unlike these works, this paper generates related-work sections "
          "with cooperating language model agents that cite every claim.")
BIBLIOGRAPHY = ("LexRank selects salient sentences by graph centrality [R1]. SummaRuNNer scores sentences with a "
                "supervised recurrent network [R2]. An attentional encoder-decoder rewrites the source document [R3].")


def test_a_themed_paragraph_with_a_comparison_and_a_supported_closing_scores_one():
    assert positioning(THEMED, TITLE, PAPER, WORKS, THRESHOLD, UNIT) == 1.0
    assert positioning_any(THEMED, TITLE, unit_sentences=UNIT) == 1.0
    assert synthesis(THEMED, WORKS, THRESHOLD, UNIT) == 1.0


def test_one_sentence_per_work_scores_zero():
    assert positioning(BIBLIOGRAPHY, TITLE, PAPER, WORKS, THRESHOLD, UNIT) == 0.0
    assert positioning_any(BIBLIOGRAPHY, TITLE, unit_sentences=UNIT) == 0.0
    assert synthesis(BIBLIOGRAPHY, WORKS, THRESHOLD, UNIT) == 0.0


def test_a_list_of_citations_is_not_synthesis():
    listing = "Several approaches have been proposed [R1, R2, R3]. LexRank ranks sentences by centrality [R1]."
    assert synthesis(listing, WORKS, THRESHOLD, UNIT) == 0.0
    assert synthesis(listing, None, THRESHOLD, UNIT) == 0.0  # too few words even without any support asked
    assert content_per_citation("Several approaches have been proposed [R1, R2, R3].") == pytest.approx(4 / 3)
    assert content_per_citation(BIBLIOGRAPHY) == 6.0  # one sentence of six content words per work


def test_synthesis_needs_support_from_the_cited_works_when_their_texts_are_known():
    unsupported = ("Both methods [R1, R2] were evaluated on protein folding benchmarks with quantum annealing "
                   "hardware and chemical reaction yields.")
    assert synthesis(unsupported, None, THRESHOLD, UNIT) == 1.0  # no texts: judged on its words alone
    assert synthesis(unsupported, WORKS, THRESHOLD, UNIT) == 0.0


def test_a_positioning_claim_the_paper_does_not_make_is_not_counted():
    text = ("Extractive summarisation selects salient sentences using graph centrality [R1] or supervised sentence "
            "scoring [R2]. Unlike these works, this paper trains quantum annealing controllers for protein folding "
            "simulations.")
    assert positioning_any(text, TITLE, unit_sentences=UNIT) == 1.0
    assert positioning(text, TITLE, PAPER, WORKS, THRESHOLD, UNIT) == 0.0


def test_a_copied_cited_we_is_not_positioning():
    paper = PAPER + " We select salient sentences from the source document by graph centrality."
    text = ("Graph methods rank sentences [R1]. We select salient sentences from the source document by graph "
            "centrality [R1].")
    assert positioning_any(text, TITLE, unit_sentences=UNIT) == 1.0
    assert positioning(text, TITLE, paper, WORKS, THRESHOLD, UNIT) == 0.0  # supported, but R1's own words
    assert positioning(text, TITLE, paper, None, THRESHOLD, UNIT) == 1.0  # the copy shows only with R1's text


def test_positioning_is_undefined_without_the_papers_text_and_ignores_roadmap_sentences():
    assert positioning(THEMED, TITLE, "", WORKS, THRESHOLD, UNIT) is None
    roadmap = "In this section, we review extractive summarisation [R1]. We first briefly review graph methods [R1]."
    assert positioning_any(roadmap, TITLE, unit_sentences=UNIT) == 0.0


def test_a_closing_paragraph_without_citations_belongs_to_the_paragraph_before():
    text = THEMED.replace(" Unlike these works,", "\n\nUnlike these works,")
    assert len(section_paragraphs(text)) == 1
    assert positioning(text, TITLE, PAPER, WORKS, THRESHOLD, UNIT) == 1.0


def test_relating_measures_count_per_reading_unit_whatever_the_paragraphs_and_order():
    """Version 5: merging the section into one paragraph, shuffling it, or dealing a theme's sentences across the
    others does not raise positioning or synthesis (version 4 counted paragraphs: one block scored 1)."""
    first = THEMED  # four sentences: a comparison and a positioning one
    second = BIBLIOGRAPHY + " " + BIBLIOGRAPHY.replace("[R1]", "[R4]").replace("[R2]", "[R5]").replace("[R3]", "[R6]")
    cut = first + "\n\n" + second  # ten sentences: two reading units, one positioning sentence
    merged = (first + " " + second).replace("\n\n", " ")
    shuffled = " ".join(reversed(split_sentences(merged)))
    for text in (cut, merged, shuffled):
        assert positioning(text, TITLE, PAPER, WORKS, THRESHOLD, UNIT) == 0.5
        assert positioning_any(text, TITLE, unit_sentences=UNIT) == 0.5
        assert synthesis(text, WORKS, THRESHOLD, UNIT) == 0.5
    assert positioning(cut, TITLE, PAPER, WORKS, THRESHOLD, 10) == 1.0  # one unit of ten sentences
    with pytest.raises(ValueError, match="unit_sentences"):
        positioning_any(cut, TITLE, unit_sentences=0)


def test_theme_coherence_is_higher_for_works_grouped_by_topic():
    grouped = ("Graph centrality [R1], sentence scoring [R2] and encoder-decoders [R3] summarise documents.\n\n"
               "Policy gradients [R4], centralised critics [R5] and independent learners [R6] train agents.")
    shuffled = ("Graph centrality [R1], centralised critics [R5] and encoder-decoders [R3] are used.\n\n"
                "Policy gradients [R4], sentence scoring [R2] and independent learners [R6] are used.")
    assert theme_coherence(grouped, WORKS) == 1.0
    assert theme_coherence(shuffled, WORKS) < theme_coherence(grouped, WORKS)
    assert theme_coherence(THEMED, WORKS) is None  # one paragraph
    assert theme_coherence(grouped, None) is None


def test_relating_scores_names_every_measure():
    scores = relating_scores(THEMED, TITLE, PAPER, WORKS, THRESHOLD, UNIT)
    assert tuple(scores) == MEASURES
    assert scores["theme_coherence"] is None and scores["positioning"] == 1.0
    assert relating_scores("", TITLE, PAPER, WORKS, THRESHOLD, UNIT) == dict.fromkeys(MEASURES)


def test_measures_read_author_year_citations_of_human_sections():
    text = ("Smith et al. (2018) select salient sentences by graph centrality, and Doe and Roe (2019) score "
            "sentences with a supervised recurrent network of the source document. Unlike these works, we generate "
            "related-work sections with cooperating language model agents that cite every claim.")
    works = {"smith 2018": WORKS["R1"], "doe 2019": WORKS["R2"]}
    assert split_sentences(text)[0].startswith("Smith et al. (2018) select")
    assert synthesis(text, works, THRESHOLD, UNIT) == 1.0
    assert positioning(text, TITLE, PAPER, works, THRESHOLD, UNIT) == 1.0


def test_lowercased_sections_are_split_into_sentences():
    text = ("(barzilay and mckeown 2001) for example , evaluated paraphrases by asking judges. (lin and pantel 2001) "
            "judge paraphrases manually. we strive for a general evaluation.")
    assert len(split_sentences(text)) == 3
    assert positioning_any(text, unit_sentences=UNIT) == 1.0


@pytest.mark.parametrize(("text", "groups"), [
    ("A [R3]. B [R1, R4]. C [R2; R10].", [["r3"], ["r1", "r4"], ["r2", "r10"]]),
    ("A [12]. B [3, 5]. C [3-5]. D [6][7].", [["12"], ["3", "5"], ["3", "4", "5"], ["6", "7"]]),
    ("Shown (Smith et al., 2018; Doe and Roe, 2019) and (Smith, 2020a).",
     [["smith 2018", "doe 2019"], ["smith 2020a"]]),
    ("Smith et al. (2018) did X. Doe and Roe (2019) did Y.", [["smith 2018"], ["doe 2019"]]),
    ("Smith et al. (2018); Roe et al. (2020) did Z.", [["smith 2018", "roe 2020"]]),
    ("Voita et al. (2018, 2019b) and (Xiao et al., 2021a,b; Liu et al., 2021a).",
     [["voita 2018", "voita 2019b"], ["xiao 2021a", "xiao 2021b", "liu 2021a"]]),
    ("Müller et al. (2018) and (Popović, 2015; Timkey and van Schijndel, 2021, inter alia).",
     [["muller 2018"], ["popovic 2015", "timkey 2021"]]),
    ("(Tjong Kim Sang and De Meulder, 2003) (Yuan et al.,2019) (Smith, 2020, p. 5)",
     [["sang 2003", "yuan 2019", "smith 2020"]]),
    ("as in (barzilay and mckeown 2001) and (lin and hovy, 2002; nenkova 2005).",
     [["barzilay 2001"], ["lin 2002", "nenkova 2005"]]),
    ("then (callison burch et al. 2006b);(papineni et al., 2002) measure. (pang et al 2002) too.",
     [["burch 2006b", "papineni 2002"], ["pang 2002"]]),
    (r"As \cite{vaswani2017, devlin2019} and \citep[p.~3]{lee} show.", [["vaswani2017", "devlin2019"], ["lee"]]),
    ("Not these: [see R3], [Attention Is All You Need], (see Table 1), (CVPR 2019), in 2020 (e.g., product review). "
     "In (2019) we ran.", []),
])
def test_citation_forms_are_parsed(text, groups):
    assert citation_groups(text) == groups
