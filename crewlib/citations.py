"""Citation markers: parse ``[R3]`` / ``[R3, R7]`` and resolve keys to reference ids.

References are shown to an LLM with short keys ``R1..Rn`` (DESIGN.md §1); this module maps
them back. Citation verification = share of markers that resolve to a known paper.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_BRACKET = re.compile(r"\[([^\[\]]{1,200})\]")
_KEY = re.compile(r"^R\d+$")


def reference_keys(n: int) -> list[str]:
    return [f"R{i}" for i in range(1, n + 1)]


def find_citation_keys(text: str) -> list[str]:
    """Every key cited, in order of appearance, repeats kept: ``"[R1, R3] ... [R1]"`` → R1, R3, R1.

    Only brackets whose every comma/semicolon-separated item looks like ``R<number>`` count.
    """
    keys: list[str] = []
    for match in _BRACKET.finditer(text):
        items = [item.strip() for item in re.split(r"[,;]", match.group(1))]
        if items and all(_KEY.match(item) for item in items):
            keys.extend(items)
    return keys


@dataclass(frozen=True)
class CitationCheck:
    markers: int  # citation keys in the text, repeats counted
    resolved: int  # of those, keys that map to a known reference
    unresolved_keys: tuple[str, ...]
    cited_ids: tuple[str, ...]  # distinct resolved reference ids, in order of first citation

    @property
    def verification(self) -> float:
        """Share of markers that resolve; 1.0 for a text with no markers (nothing unverified)."""
        return self.resolved / self.markers if self.markers else 1.0


def check_citations(text: str, key_to_id: Mapping[str, str]) -> CitationCheck:
    keys = find_citation_keys(text)
    resolved = [k for k in keys if k in key_to_id]
    cited: list[str] = []
    for k in resolved:
        if key_to_id[k] not in cited:
            cited.append(key_to_id[k])
    unresolved = tuple(dict.fromkeys(k for k in keys if k not in key_to_id))
    return CitationCheck(len(keys), len(resolved), unresolved, tuple(cited))
