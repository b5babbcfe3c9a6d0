"""Citation markers: parse ``[R3]`` / ``[R3, R7]`` and resolve keys to reference ids.

References are shown to an LLM with short keys ``R1..Rn`` (docs/method.md, "Citation graph and tasks"); this module maps
them back. Citation verification = share of citations that resolve to a known paper, where
stray author–year citations ("Smith et al., 2020") and bracketed citations that are not keys
("[Attention Is All You Need]") count as citations that cannot resolve.
Outputs of other systems may use numeric markers (``[3]``, ``[3, 5]``, ``[3-5]``):
``style="numeric"``. The environment and the evaluation suite both use this one parser.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_BRACKET = re.compile(r"\[([^\[\]]{1,200})\]")
_KEY = {"R": re.compile(r"^R\d+$"), "numeric": re.compile(r"^\d{1,4}$")}
_RANGE = re.compile(r"^(\d{1,4})\s*[-–]\s*(\d{1,4})$")
# "(Smith et al., 2020)", "(Smith and Lee 2019; Doe, 2021a)", "Smith et al. (2020)".
_SURNAME = r"[A-Z][A-Za-z'\-]+"
_YEAR = r"(?:19|20)\d{2}[a-z]?\b"
_AUTHOR_YEAR = re.compile(
    rf"{_SURNAME}\s+(?:et\s+al\.?|(?:and|&)\s+{_SURNAME}),?\s+\(?{_YEAR}"  # Smith et al. (2020), Doe and Roe, 2019
    rf"|\({_SURNAME},?\s+{_YEAR}"  # (Smith, 2020)
    rf"|{_SURNAME}\s+\({_YEAR}"  # Smith (2020)
)


def reference_keys(n: int) -> list[str]:
    return [f"R{i}" for i in range(1, n + 1)]


def find_citation_keys(text: str, style: str = "R") -> list[str]:
    """Every key cited, in order of appearance, repeats kept: ``"[R1, R3] ... [R1]"`` → R1, R3, R1.

    Only brackets whose every comma/semicolon-separated item is a key count (``R<number>`` for
    ``style="R"``; a number or a range ``3-5`` for ``style="numeric"``, ranges expanded, at most 50).
    """
    if style not in _KEY:
        raise ValueError(f"citation style must be one of {sorted(_KEY)}, not {style!r}")
    pattern = _KEY[style]
    keys: list[str] = []
    for match in _BRACKET.finditer(text):
        items = [item.strip() for item in re.split(r"[,;]", match.group(1))]
        expanded: list[str] = []
        for item in items:
            rng = _RANGE.match(item) if style == "numeric" else None
            if rng and 0 < int(rng.group(2)) - int(rng.group(1)) < 50:
                expanded += [str(i) for i in range(int(rng.group(1)), int(rng.group(2)) + 1)]
            elif pattern.match(item):
                expanded.append(item)
            else:
                expanded = []
                break
        keys.extend(expanded)
    return keys


def find_non_key_citations(text: str, style: str = "R") -> list[str]:
    """Bracketed citations that are not keys (``[Chunk-based Nearest Neighbor MT]``, ``[3]`` in ``R`` style):
    citations a reader cannot resolve. Markdown links ``[text](url)`` are not citations."""
    pattern = _KEY[style]
    found = []
    for match in _BRACKET.finditer(text):
        if text[match.end():match.end() + 1] == "(":
            continue
        items = [item.strip() for item in re.split(r"[,;]", match.group(1))]
        if not all(pattern.match(item) or (style == "numeric" and _RANGE.match(item)) for item in items):
            found.append(match.group(0))
    return found


def find_author_year_citations(text: str) -> list[str]:
    """Stray author–year citations (``Smith et al., 2020``) — keys an LLM should not have written."""
    return [m.group(0) for m in _AUTHOR_YEAR.finditer(text)]


@dataclass(frozen=True)
class CitationCheck:
    markers: int  # citation keys in the text, repeats counted
    resolved: int  # of those, keys that map to a known reference
    unresolved_keys: tuple[str, ...]
    cited_ids: tuple[str, ...]  # distinct resolved reference ids, in order of first citation
    stray: tuple[str, ...] = ()  # author–year and bracketed non-key citations, which no key resolves

    @property
    def citations(self) -> int:
        return self.markers + len(self.stray)

    @property
    def verification(self) -> float | None:
        """Share of citations that resolve; None for a text with no citations — it has verified nothing
        (docs/method.md, "Metrics"), so it is reported as unavailable, never as 1.0."""
        return self.resolved / self.citations if self.citations else None


def check_citations(text: str, key_to_id: Mapping[str, str], style: str = "R") -> CitationCheck:
    keys = find_citation_keys(text, style)
    resolved = [k for k in keys if k in key_to_id]
    cited: list[str] = []
    for k in resolved:
        if key_to_id[k] not in cited:
            cited.append(key_to_id[k])
    unresolved = tuple(dict.fromkeys(k for k in keys if k not in key_to_id))
    stray = (*find_author_year_citations(text), *find_non_key_citations(text, style))
    return CitationCheck(len(keys), len(resolved), unresolved, tuple(cited), stray)
