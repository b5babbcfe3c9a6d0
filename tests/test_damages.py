"""The five damages that undo what makes a related-work section one (crewlib.experiments.damages), on small golds:
a capitalised one with narrative and parenthetical keys and a closing sentence on the paper, and a lowercased one
(Hoang & Kan's style, keyed)."""

from __future__ import annotations

from collections import Counter

import pytest

from crewlib.citations import find_citation_keys
from crewlib.eval.relating import split_sentences
from crewlib.experiments import damages
from crewlib.experiments import discrimination as disc
from crewlib.positioning import refers_to_paper
from crewlib.sections import paragraphs

TITLE = "HIBERT: Document Level Pre-training of Hierarchical Transformers"
ROADMAP = "In this section, we review graph-based and neural summarisation."
GRAPHS = ("Graph methods rank sentences by centrality [R1, R2]. Mihalcea and Tarau [R2] let sentences vote in a "
          "similarity graph. Neural models learn sentence scores from labelled data [R3].")
ENCODERS = ("Pretrained encoders transfer broadly [R4]. Devlin et al. [R4] mask tokens, whereas Radford et al. [R5] "
            "predict the next word. Unlike these works, our method pretrains whole documents. HIBERT thus models "
            "the context between sentences.")
GOLD = f"{ROADMAP}\n\n{GRAPHS}\n\n{ENCODERS}"
LOWER = ("researchers usually present graph-based ranking for summarisation [R1, R2]. for example, mihalcea and "
         "tarau [R2] evaluated textrank on news. in contrast, neural models learn scores from data [R3].\n\n"
         "pretrained encoders transfer broadly [R4]. devlin et al. [R4] mask tokens. in this paper, we pretrain at "
         "the document level.")
SOURCES = {"R1": "LexRank estimates sentence centrality in a graph. Edges join similar sentences.",
           "R2": "In this paper, we introduce TextRank, a graph ranking model. It ranks words and sentences.",
           "R3": "This paper proposes a neural extractive model. It scores sentences.",
           "R4": "We introduce BERT, a bidirectional encoder. It is pretrained on masked tokens."}


def _sentences(text: str) -> list[list[str]]:
    return [split_sentences(p) for p in paragraphs(text)]


def test_the_lowercased_gold_is_split_at_its_sentences_despite_its_capital_keys():
    assert damages.is_lowercased(LOWER) and not damages.is_lowercased(GOLD)
    assert [len(p) for p in _sentences(LOWER)] == [3, 3] and [len(p) for p in _sentences(GOLD)] == [1, 3, 4]
    assert _sentences(LOWER)[1][1] == "devlin et al. [R4] mask tokens."


# ----------------------------------------------------------------------------- works_listed
def test_works_listed_leaves_one_contentless_sentence_per_citing_paragraph():
    out = disc.degrade(GOLD, "works_listed", other="", title=TITLE)
    assert out == ("Several approaches have been proposed [R1, R2, R3].\n\n"
                   "Several approaches have been proposed [R4, R5].")  # the roadmap paragraph cites nothing: gone
    lower = disc.degrade(LOWER, "works_listed", other="")
    assert lower == ("several approaches have been proposed [R1, R2, R3].\n\n"
                     "several approaches have been proposed [R4].")


def test_works_listed_skips_a_gold_that_cites_nothing():
    with pytest.raises(ValueError, match="cites no work"):
        disc.degrade("Graphs rank sentences. Models learn scores.", "works_listed", other="")


# ----------------------------------------------------------------------------- positioning_removed
def test_positioning_removed_drops_the_sentences_on_the_paper_but_keeps_the_roadmap():
    out = disc.degrade(GOLD, "positioning_removed", other="", title=TITLE)
    assert out == (f"{ROADMAP}\n\n{GRAPHS}\n\nPretrained encoders transfer broadly [R4]. Devlin et al. [R4] mask "
                   "tokens, whereas Radford et al. [R5] predict the next word.")
    untitled = disc.degrade(GOLD, "positioning_removed", other="")  # without the title its short name is a name
    assert "HIBERT thus" in untitled and "our method" not in untitled
    lower = disc.degrade(LOWER, "positioning_removed", other="")
    assert lower == LOWER.replace(" in this paper, we pretrain at the document level.", "")


def test_positioning_removed_lets_an_emptied_paragraph_disappear_and_skips_where_it_must():
    out = disc.degrade(f"{GRAPHS}\n\nWe pretrain whole documents. Our model is hierarchical.", "positioning_removed",
                       other="")
    assert out == GRAPHS
    with pytest.raises(ValueError, match="no sentence speaks of the target paper"):
        disc.degrade(f"{ROADMAP}\n\n{GRAPHS}", "positioning_removed", other="", title=TITLE)  # a roadmap only
    with pytest.raises(ValueError, match="nothing would be left"):
        disc.degrade("We pretrain whole documents. Our model is hierarchical.", "positioning_removed", other="")


# ----------------------------------------------------------------------------- annotated_bibliography
def test_annotated_bibliography_gives_each_work_its_abstract_opening_in_the_third_person():
    out = disc.degrade(GOLD, "annotated_bibliography", other="", title=TITLE, sources=SOURCES)
    assert out == ("LexRank estimates sentence centrality in a graph [R1]. In the work, the authors introduce "
                   "TextRank, a graph ranking model [R2]. The work proposes a neural extractive model [R3].\n\n"
                   "The authors introduce BERT, a bidirectional encoder [R4]. [R5] is a related work.")
    for paragraph in _sentences(out):
        assert all(len(find_citation_keys(s)) == 1 and not refers_to_paper(s, TITLE) for s in paragraph)
    lower = disc.degrade(LOWER, "annotated_bibliography", other="", sources=SOURCES)
    assert lower.split("\n\n")[1] == "the authors introduce bert, a bidirectional encoder [R4]."
    assert damages.is_lowercased(lower) and find_citation_keys(lower) == ["R1", "R2", "R3", "R4"]


def test_annotated_bibliography_skips_when_no_cited_work_has_an_abstract():
    with pytest.raises(ValueError, match="no cited work has an abstract"):
        disc.degrade(GOLD, "annotated_bibliography", other="", sources={"R9": "An uncited work. It exists."})
    with pytest.raises(ValueError, match="no cited work has an abstract"):
        disc.degrade(GOLD, "annotated_bibliography", other="")


# ----------------------------------------------------------------------------- themes_interleaved
def test_themes_interleaved_deals_the_sentences_round_robin_into_the_same_paragraph_sizes():
    out = disc.degrade(GOLD, "themes_interleaved", other="", title=TITLE)
    before, after = _sentences(GOLD), _sentences(out)
    assert [len(p) for p in after] == [len(p) for p in before] == [1, 3, 4]
    assert Counter(s for p in after for s in p) == Counter(s for p in before for s in p)
    (roadmap,), (g1, g2, g3), (e1, e2, e3, e4) = before
    assert after == [[roadmap], [g1, e1, g2], [e2, g3, e3, e4]]
    lower = _sentences(disc.degrade(LOWER, "themes_interleaved", other=""))
    (a1, a2, a3), (b1, b2, b3) = _sentences(LOWER)
    assert lower == [[a1, b1, a2], [b2, a3, b3]]


def test_themes_interleaved_skips_without_two_long_paragraphs_or_when_dealing_changes_nothing():
    with pytest.raises(ValueError, match="fewer than two paragraphs"):
        disc.degrade(f"{ROADMAP}\n\n{GRAPHS}", "themes_interleaved", other="")
    with pytest.raises(ValueError, match="leaves every paragraph as it was"):
        disc.degrade("Graphs rank [R1]. Models learn [R2].\n\nModels learn [R2]. Graphs rank [R1].",
                     "themes_interleaved", other="")


# ----------------------------------------------------------------------------- comparisons_removed
def test_comparisons_removed_drops_sentences_relating_works_but_keeps_positioning():
    out = disc.degrade(GOLD, "comparisons_removed", other="", title=TITLE)
    assert out == (f"{ROADMAP}\n\nMihalcea and Tarau [R2] let sentences vote in a similarity graph. Neural models "
                   "learn sentence scores from labelled data [R3].\n\nPretrained encoders transfer broadly [R4]. "
                   "Unlike these works, our method pretrains whole documents. HIBERT thus models the context between "
                   "sentences.")
    lower = disc.degrade(LOWER, "comparisons_removed", other="")
    assert lower == LOWER.replace("researchers usually present graph-based ranking for summarisation [R1, R2]. ", "") \
        .replace(" in contrast, neural models learn scores from data [R3].", "")


def test_comparisons_removed_skips_without_a_comparison_or_when_nothing_would_be_left():
    with pytest.raises(ValueError, match="no sentence compares"):
        disc.degrade("Graphs rank sentences [R1]. Unlike these works, we pretrain.", "comparisons_removed", other="")
    with pytest.raises(ValueError, match="nothing would be left"):
        disc.degrade("Graphs rank sentences [R1, R2]. Models differ in scope [R3].", "comparisons_removed", other="")


def test_an_unknown_damage_is_refused():
    with pytest.raises(ValueError, match="unknown damage"):
        damages.damage(GOLD, "typos")
    assert set(damages.DAMAGES) <= set(disc.DEGRADATIONS)


# ----------------------------------------------------------------------------- the bundled sample
def test_every_kind_runs_on_the_bundled_sample_and_each_skip_says_why():
    from crewlib.config import load_params
    from crewlib.eval import EvalExample
    from crewlib.tasks import build_tasks

    examples = [EvalExample.from_rwg(e) for e in build_tasks(load_params("quick")).examples.values()]
    out = disc.degraded_outputs(examples, kinds=disc.DEGRADATIONS, keyed=True)
    skipped = out.attrs["skipped"]
    assert set(out.system) == {disc.GOLD, *disc.DEGRADATIONS}  # every kind applied to some paper
    assert len(out) + len(skipped) == len(examples) * (1 + len(disc.DEGRADATIONS))
    for kind in damages.DAMAGES:  # each new damage applies to nearly every paper, and changes it
        assert (out.system == kind).sum() >= len(examples) - 1
    golds = out[out.system == disc.GOLD].set_index("example").text
    assert all(row.text != golds[row.example] for row in out[out.system != disc.GOLD].itertuples())
    # the one gold that never names its paper as "we", "our" or its title's short name (ChatDev's: "ChatDev ...")
    assert [(s["damage"], s["reason"].split(":")[0]) for s in skipped] == [
        ("positioning_removed", "no sentence speaks of the target paper")]
