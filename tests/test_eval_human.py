"""Human pairwise evaluation: blinded packets, sheet validation, win rates and agreement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from crewlib.eval.human import DIMENSIONS, AnnotationError, make_pair_packets, read_annotations
from crewlib.eval.human_stats import fleiss_kappa_by_dimension, human_majority, judge_agreement, win_tie_loss

A, B = "CREW", "SRW"
ANNOTATORS = ("alice", "bob")


def _outputs(n: int = 20) -> pd.DataFrame:
    rows = []
    for i in range(n):
        ex = f"ex{i:02d}"
        alpha = f"Alpha section {i}: prior work on graphs <b>bold</b> & more."
        rows.append({"system": A, "example": ex, "text": alpha})
        rows.append({"system": B, "example": ex, "text": f"Beta section {i}: earlier studies of retrieval."})
    rows.append({"system": A, "example": "only_a", "text": "Alpha without a partner."})
    rows.append({"system": B, "example": "empty_b", "text": "   "})
    rows.append({"system": A, "example": "empty_b", "text": "Alpha whose partner is empty."})
    return pd.DataFrame(rows)


def _packets(tmp_path, seed: int = 0, name: str = "packets"):
    out = tmp_path / name
    key = make_pair_packets(_outputs(), A, B, annotators=ANNOTATORS, out_dir=out, seed=seed,
                            context={"ex00": "Target: a paper about graphs."})
    return out, key


def _fill(path, key: pd.DataFrame, choose) -> None:
    """Fill a packet sheet; choose(pair_id, system_1) -> cell value for every dimension."""
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False)
    system_1 = key.set_index("pair_id")["system_1"]
    for dim in DIMENSIONS:
        sheet[dim] = [choose(pid, system_1[pid], dim) for pid in sheet["pair_id"]]
    sheet.to_csv(path, index=False)


def _prefer_a(pair_id, system_1, dim):
    return "1" if system_1 == A else "2"


# --------------------------------------------------------------------------- packets


def test_packets_are_blinded_and_key_maps_back(tmp_path):
    out, key = _packets(tmp_path)
    assert list(key.columns) == ["pair_id", "example", "system_1", "system_2"]
    assert len(key) == 20  # only_a and empty_b have no pair
    assert list(key["pair_id"]) == [f"P{i:03d}" for i in range(1, 21)]
    assert pd.read_csv(out / "key.csv", dtype=str).equals(key)

    outputs = _outputs().set_index(["system", "example"])["text"]
    for name in ANNOTATORS:
        csv_path, html_path = out / f"packet_{name}.csv", out / f"packet_{name}.html"
        assert csv_path.exists() and html_path.exists()
        for path in (csv_path, html_path):
            content = path.read_text(encoding="utf-8").lower()
            assert A.lower() not in content and B.lower() not in content, path
        sheet = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
        assert list(sheet.columns) == ["pair_id", "example", "context", "text_1", "text_2", *DIMENSIONS, "comment"]
        assert (sheet[[*DIMENSIONS, "comment"]] == "").all().all()
        # the key un-blinds each packet row
        merged = sheet.merge(key, on=["pair_id", "example"])
        assert len(merged) == 20
        for row in merged.itertuples():
            assert row.text_1 == outputs[(row.system_1, row.example)]
            assert row.text_2 == outputs[(row.system_2, row.example)]
        assert sheet.set_index("example").loc["ex00", "context"] == "Target: a paper about graphs."

    html = (out / "packet_alice.html").read_text(encoding="utf-8")
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in html and "<b>bold</b>" not in html
    assert all(dim in html for dim in DIMENSIONS)
    # every annotator sees the same order and blinding
    assert (out / "packet_alice.csv").read_text() == (out / "packet_bob.csv").read_text()


def test_packets_randomise_order_and_sides_reproducibly(tmp_path):
    out1, key1 = _packets(tmp_path, seed=7, name="one")
    out2, key2 = _packets(tmp_path, seed=7, name="two")
    _, key3 = _packets(tmp_path, seed=8, name="three")
    assert key1.equals(key2)
    for name in ("packet_alice.csv", "packet_alice.html", "key.csv"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes()
    assert set(key1["system_1"]) == {A, B}  # both orders occur
    assert list(key1["example"]) != sorted(key1["example"])  # rows shuffled
    assert not key1.equals(key3)


def test_packets_reject_bad_inputs_and_warn_on_leaked_names(tmp_path):
    with pytest.raises(ValueError, match="'GPT'"):
        make_pair_packets(_outputs(), A, "GPT", annotators=ANNOTATORS, out_dir=tmp_path)
    lonely = _outputs()[lambda d: d["example"].isin(["only_a", "empty_b"])]
    with pytest.raises(ValueError, match="no example has a non-empty text"):
        make_pair_packets(lonely, A, B, annotators=ANNOTATORS, out_dir=tmp_path)
    leaky = _outputs(3)
    leaky.loc[0, "text"] = "As CREW we cover ..."
    with pytest.warns(UserWarning, match="'CREW' appears"):
        make_pair_packets(leaky, A, B, annotators=ANNOTATORS, out_dir=tmp_path)


# --------------------------------------------------------------------------- reading sheets


def test_round_trip_all_preferences_for_a(tmp_path):
    out, key = _packets(tmp_path)
    paths = [out / f"packet_{name}.csv" for name in ANNOTATORS]
    for path in paths:
        _fill(path, key, _prefer_a)
    ann = read_annotations(paths, out / "key.csv", system_a=A)
    assert list(ann.columns) == ["annotator", "pair_id", "example", "dimension", "preference"]
    assert len(ann) == 2 * 20 * 3
    assert set(ann["annotator"]) == set(ANNOTATORS)
    assert (ann["preference"] == "a").all()
    # from the other side, the same sheets say "b"
    assert (read_annotations(paths, key, system_a=B)["preference"] == "b").all()

    table = win_tie_loss(ann, n_resamples=999).set_index("dimension")
    assert list(table.index) == [*DIMENSIONS, "overall"]
    assert (table["win"] == 1.0).all() and (table["loss"] == 0.0).all()
    assert (table["win_ci_low"] == 1.0).all() and (table["win_ci_high"] == 1.0).all()
    assert table.loc["overall", "n"] == 120 and table.loc["coverage", "n_pairs"] == 20

    with pytest.raises(ValueError, match="un-blinded with system_a='CREW'"):
        judge_agreement(ann, pd.DataFrame(columns=["system", "example", "metric", "value"]), system_a=B, system_b=A)


def test_read_annotations_unblinds_each_cell(tmp_path):
    out, key = _packets(tmp_path)
    path = out / "packet_alice.csv"
    cells = {"coverage": " 1 ", "logic": "2", "relevance": "TIE"}  # case and whitespace are tolerated
    _fill(path, key, lambda pid, s1, dim: cells[dim])
    ann = read_annotations([path], key, system_a=A).merge(key, on=["pair_id", "example"])
    cov = ann[ann["dimension"] == "coverage"]
    assert ((cov["preference"] == "a") == (cov["system_1"] == A)).all()
    logic = ann[ann["dimension"] == "logic"]
    assert ((logic["preference"] == "a") == (logic["system_2"] == A)).all()
    assert (ann[ann["dimension"] == "relevance"]["preference"] == "tie").all()
    assert set(ann["annotator"]) == {"alice"}


def _drop_column(sheet):
    return sheet.drop(columns="logic")


def _unknown_pair(sheet):
    sheet.loc[0, "pair_id"] = "P999"
    return sheet


def _duplicate_pair(sheet):
    return pd.concat([sheet, sheet[sheet["pair_id"] == "P005"]])


def _empty_cell(sheet):
    sheet.loc[sheet["pair_id"] == "P003", "coverage"] = ""
    return sheet


def _invalid_cell(sheet):
    sheet.loc[sheet["pair_id"] == "P004", "relevance"] = "maybe"
    return sheet


def _missing_pair(sheet):
    return sheet[sheet["pair_id"] != "P002"]


def _wrong_example(sheet):
    sheet.loc[sheet["pair_id"] == "P006", "example"] = "ex99"
    return sheet


@pytest.mark.parametrize(
    ("corrupt", "expected"),
    [
        (_drop_column, ["missing column", "logic"]),
        (_unknown_pair, ["P999", "not in the key"]),
        (_duplicate_pair, ["P005", "more than once"]),
        (_empty_cell, ["P003", "'coverage'", "empty", "write 1, 2 or tie"]),
        (_invalid_cell, ["P004", "'relevance'", "'maybe'", "write 1, 2 or tie"]),
        (_missing_pair, ["P002", "missing from the sheet"]),
        (_wrong_example, ["P006", "'example'", "ex99"]),
    ],
)
def test_invalid_sheets_raise_annotation_error(tmp_path, corrupt, expected):
    out, key = _packets(tmp_path)
    path = out / "packet_alice.csv"
    _fill(path, key, _prefer_a)
    corrupt(pd.read_csv(path, dtype=str, keep_default_na=False)).to_csv(path, index=False)
    with pytest.raises(AnnotationError) as err:
        read_annotations([path], key, system_a=A)
    message = str(err.value)
    assert "packet_alice.csv" in message
    for part in expected:
        assert part in message


def test_two_sheets_of_one_annotator_are_rejected(tmp_path):
    out, key = _packets(tmp_path)
    _fill(out / "packet_alice.csv", key, _prefer_a)
    copy = tmp_path / "alice.csv"
    copy.write_text((out / "packet_alice.csv").read_text())
    with pytest.raises(AnnotationError, match="annotator 'alice'"):
        read_annotations([out / "packet_alice.csv", copy], key, system_a=A)


# --------------------------------------------------------------------------- win rates


def _tidy(judgements: dict[str, list[str]], dimension: str = "coverage") -> pd.DataFrame:
    """annotator -> preferences for pairs P001..; one dimension."""
    return pd.DataFrame([
        {"annotator": who, "pair_id": f"P{i:03d}", "example": f"ex{i}", "dimension": dimension, "preference": p}
        for who, prefs in judgements.items() for i, p in enumerate(prefs, start=1)
    ])


def test_win_tie_loss_hand_computed():
    ann = _tidy({"alice": ["a"] * 7 + ["tie"] + ["b"] * 2})
    table = win_tie_loss(ann).set_index("dimension")
    assert list(table.index) == ["coverage", "overall"]
    row = table.loc["coverage"]
    assert row["n"] == 10
    assert row["win"] == pytest.approx(0.7) and row["tie"] == pytest.approx(0.1) and row["loss"] == pytest.approx(0.2)
    assert row["win_excl_ties"] == pytest.approx(7 / 9)
    assert row["sign_test_p"] == pytest.approx(binomtest(7, 9).pvalue)
    assert row["sign_test_p"] == pytest.approx(92 / 512)  # 2 * P(X >= 7), X ~ Bin(9, 1/2)
    assert 0.0 <= row["win_ci_low"] < 0.7 < row["win_ci_high"] <= 1.0
    assert table.loc["overall"].equals(row.rename("overall"))


def test_bootstrap_resamples_pairs_not_judgements():
    one = _tidy({"alice": ["a"] * 6 + ["b"] * 4})
    # a second annotator who agrees on every pair adds no independent evidence: same CI
    two = _tidy({"alice": ["a"] * 6 + ["b"] * 4, "bob": ["a"] * 6 + ["b"] * 4})
    ci_one = win_tie_loss(one, seed=3).loc[0, ["win_ci_low", "win_ci_high"]]
    ci_two = win_tie_loss(two, seed=3).loc[0, ["win_ci_low", "win_ci_high"]]
    assert list(ci_one) == list(ci_two)
    assert ci_one["win_ci_low"] < ci_one["win_ci_high"]


def test_the_pair_level_sign_test_counts_each_pair_once_whatever_the_number_of_annotators():
    # 3 annotators who agree: 18 judgement wins against 0 looks decisive, but it is 6 pairs against 0
    ann = _tidy({who: ["a"] * 6 + ["tie"] for who in ("x", "y", "z")})
    ann.loc[(ann.annotator == "z") & (ann.pair_id == "P007"), "preference"] = "b"  # one pair: 0 wins, 1 loss
    row = win_tie_loss(ann).iloc[0]
    assert row["sign_test_p"] == pytest.approx(binomtest(18, 19).pvalue)
    assert row["sign_test_pairs_p"] == pytest.approx(binomtest(6, 7).pvalue)  # 6 pairs won, 1 lost
    assert row["sign_test_pairs_p"] > 10 * row["sign_test_p"]


def test_sign_test_is_nan_without_decided_judgements():
    row = win_tie_loss(_tidy({"alice": ["tie"] * 4})).iloc[0]
    assert row["tie"] == 1.0
    assert np.isnan(row["sign_test_p"]) and np.isnan(row["sign_test_pairs_p"]) and np.isnan(row["win_excl_ties"])


# --------------------------------------------------------------------------- agreement


def test_fleiss_kappa_hand_computed():
    # pairs x annotators; category counts per pair (a, b, tie): (3,0,0) (2,1,0) (0,2,1) (0,0,3)
    # P_bar = (1 + 1/3 + 1/3 + 1) / 4 = 2/3; p = (5, 3, 4) / 12; P_e = 50/144; kappa = 23/47
    ann = pd.concat([
        _tidy({"x": ["a", "a", "b", "tie"], "y": ["a", "a", "b", "tie"], "z": ["a", "b", "tie", "tie"]}),
        _tidy({"x": ["a", "b", "tie"], "y": ["a", "b", "tie"], "z": ["a", "b", "tie"]}, dimension="logic"),
    ])
    ann = pd.concat([ann, _tidy({"x": ["a"] * 5}, dimension="logic").iloc[[4]]])  # P005 rated by x only
    table = fleiss_kappa_by_dimension(ann).set_index("dimension")
    assert table.loc["coverage", "kappa"] == pytest.approx(23 / 47, abs=1e-3)
    assert table.loc["coverage", "n_pairs"] == 4 and table.loc["coverage", "n_annotators"] == 3
    assert table.loc["logic", "kappa"] == pytest.approx(1.0)  # perfect agreement, P005 left out
    assert table.loc["logic", "n_pairs"] == 3


def test_fleiss_kappa_needs_two_annotators():
    with pytest.raises(ValueError, match="at least 2 annotators"):
        fleiss_kappa_by_dimension(_tidy({"alice": ["a", "b"]}))


def test_judge_agreement_hand_built():
    # majority per pair: a, b, tie (no majority), a, tie, b; e7 has no judge score for B
    ann = _tidy({
        "x": ["a", "b", "a", "a", "tie", "a", "a"],
        "y": ["a", "b", "b", "a", "tie", "b", "a"],
        "z": ["b", "a", "tie", "a", "b", "b", "a"],
    })
    assert list(human_majority(ann)["preference"]) == ["a", "b", "tie", "a", "tie", "b", "a"]
    # judge: a, b, tie, b, a, b -> agrees on e1, e2, e3, e6
    scores = {A: [5, 2, 3, 3, 4, 2, 4], B: [3, 4, 3, 4, 2, 3, None]}
    judge = pd.DataFrame([
        {"system": s, "example": f"ex{i}", "metric": "judge_coverage", "value": v}
        for s, values in scores.items() for i, v in enumerate(values, start=1) if v is not None
    ] + [{"system": A, "example": "ex1", "metric": "rouge_l", "value": 0.3}])
    row = judge_agreement(ann, judge, system_a=A, system_b=B).iloc[0]
    assert row["dimension"] == "coverage"
    assert row["n"] == 6 and row["skipped"] == 1
    assert row["agreement"] == pytest.approx(4 / 6)
    # p_o = 2/3; marginals human (2, 2, 2), judge (2, 3, 1) -> p_e = 12/36; kappa = (2/3 - 1/3) / (2/3)
    assert row["cohen_kappa"] == pytest.approx(0.5)


def test_the_packets_take_a_seeded_random_sample_of_the_evaluation_papers():
    from crewlib.config import load_params
    from crewlib.experiments.human_eval import evaluation_sample

    every = [e.target_id for e, _ in evaluation_sample(load_params("quick"))]
    two = [e.target_id for e, _ in evaluation_sample(load_params("quick", {"human": {"pairs": 2}}))]
    assert len(every) == 5 and len(two) == 2 and two == [t for t in every if t in two]
    assert two == [e.target_id for e, _ in evaluation_sample(load_params("quick", {"human": {"pairs": 2}}))]
    draws = {tuple(e.target_id for e, _ in evaluation_sample(load_params("quick", {"human": {"pairs": 2, "seed": s}})))
             for s in range(6)}
    assert len(draws) > 1 and load_params("full").human.pairs == 20
