"""Citation markers: parsing, resolution and verification."""

from crewlib.citations import check_citations, find_citation_keys, reference_keys


def test_markers_are_parsed_in_order_with_repeats():
    text = "A [R3]. B [R3, R7]; C [R2; R10]. Not these: [1], [see R3], [R], (R4)."
    assert find_citation_keys(text) == ["R3", "R3", "R7", "R2", "R10"]


def test_verification_counts_unresolvable_keys():
    keys = dict(zip(reference_keys(3), ["a", "b", "c"], strict=True))
    check = check_citations("X [R1]. Y [R2, R9]. Z [R1].", keys)
    assert (check.markers, check.resolved, check.unresolved_keys, check.cited_ids) == (4, 3, ("R9",), ("a", "b"))
    assert check.verification == 0.75
    assert check_citations("no citations here", keys).verification is None  # nothing verified, not 1.0


def test_numeric_style_expands_ranges_and_ignores_intervals_of_reals():
    text = "A [1]. B [2, 5]; C [7-9]. Not: [0.5, 1.0], [see 3], [R2]."
    assert find_citation_keys(text, "numeric") == ["1", "2", "5", "7", "8", "9"]
    assert find_citation_keys(text) == ["R2"]


def test_stray_author_year_citations_count_as_unverifiable():
    keys = {"R1": "a"}
    text = "X [R1]. Y was shown by Smith et al. (2020) and (Doe and Roe, 2019a). In 2020 we ran (Lee, 2018)."
    check = check_citations(text, keys)
    assert check.stray == ("Smith et al. (2020", "Doe and Roe, 2019a", "(Lee, 2018")
    assert check.citations == 4 and check.verification == 1 / 4


def test_a_bracketed_title_is_an_unverifiable_citation():
    keys = {"R1": "a"}
    check = check_citations("Prior work [R1] and [Chunk-based Nearest Neighbor Machine Translation] differ.", keys)
    assert check.markers == 1 and check.stray == ("[Chunk-based Nearest Neighbor Machine Translation]",)
    assert check.verification == 0.5
    assert check_citations("See [the docs](https://example.org) [R1].", keys).verification == 1.0
