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
    assert check_citations("no citations here", keys).verification == 1.0
