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

# A key as a system writes it, and one bracket of keys ([R3], [R3, R7], [R3; R7]): every pattern over keys in the
# project is built from these two.
KEY = r"R\d+"
KEY_GROUP = rf"\[{KEY}(?:\s*[,;]\s*{KEY})*\]"
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


# ---------------------------------------------------------------- every citation form of human and system sections
# citation_groups (and relating measures, crewlib.eval.relating) read the forms human sections use as well as
# keys: [R3], [12], [3-5], (Smith et al., 2018; Doe and Roe, 2019), Smith et al. (2018, 2019b), the lowercased
# RWSData form (barzilay and mckeown 2001), \cite{a,b}.
_PARTICLE = r"(?:(?:van|von|de|der|den|da|di|del|della|la|le|du|dos|das|al|el|bin|ten|ter|st\.?)\s+)"
_NOT_NAME = (r"(?!(?:The|In|See|For|And|Or|Since|From|Until|As|By|On|At|Of|To|After|Before|During|Between|About|"
             r"Table|Tables|Figure|Fig|Section|Sec|Eq|Appendix|Version|Year|Years|Early|Late|Mid|Spring|Summer|"
             r"Fall|Autumn|Winter|January|February|March|April|May|June|July|August|September|October|November|"
             r"December)\b)")
# A capitalised surname with some lower-case letter (not an acronym such as CVPR), accents and hyphens kept.
_CASED_NAME = (rf"{_PARTICLE}*{_NOT_NAME}[A-ZÀ-ÖØ-ÞĀ-ž](?=[\w'’´\-]*[a-zß-öø-ÿ])[\w'’´\-]*")
_LOWER_NAME = (r"(?!(?:e\.g|i\.e|et|al|and|or|see|cf|in|since|from|until|by|the|of|for|to|at|on|after|before|"
               r"between|during|about|around|circa|ca|year|years|table|figure|section|version|also|with)\b)"
               r"[a-zß-öø-ÿ][a-zß-öø-ÿ'\-]*")
_YEARS = r"(?:19|20)\d{2}[a-z]?(?:\s*[,;]\s*(?:(?:19|20)\d{2}[a-z]?|[a-z](?=\s*[,;)\]]))\b)*"


def _authors(name: str, several_words: bool) -> str:
    words = rf"{name}(?:\s+{name}){{0,3}}" if several_words else name
    return (rf"(?P<first>{words})(?:\s*et\s*al\b\.?|(?:\s*,\s*{words})*\s*,?\s+(?:and|&)\s+{words}"
            rf"(?:\s+et\s*al\b\.?)?)?")


_ITEM = {False: re.compile(rf"{_authors(_CASED_NAME, True)}\s*,?\s*(?P<years>{_YEARS})"),
         True: re.compile(rf"{_authors(_LOWER_NAME, True)}\s*,?\s*(?P<years>{_YEARS})")}
_NARRATIVE = re.compile(rf"\b{_authors(_CASED_NAME, True)}\s*\(\s*(?P<years>{_YEARS})\s*\)")
_PARENS = re.compile(r"\(([^()]{1,400})\)")
_LATEX = re.compile(r"\\(?:no)?cite[a-zA-Z]*\*?(?:\s*\[[^\]]*\]){0,2}\s*\{([^{}]*)\}")
_ANY_KEY = re.compile(r"^(?:[Rr]\d+|\d{1,4})$")


def _work_name(first: str, years: str) -> list[str]:
    """``"Müller", "2019b,a"`` → ``["muller 2019b", "muller 2019a"]``: the last word of the first author's surname,
    accents folded, with each year."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", first.split()[-1]).encode("ascii", "ignore").decode().lower()
    surname = re.sub(r"[^a-z\-]", "", folded).strip("-")
    works, base = [], ""
    for part in re.split(r"\s*[,;]\s*", years.strip()):
        if re.fullmatch(r"(?:19|20)\d{2}[a-z]?", part):
            base = part[:4]
            works.append(f"{surname} {part}")
        elif base and re.fullmatch(r"[a-z]", part):
            works.append(f"{surname} {base}{part}")
    return works


def is_lowercased(text: str) -> bool:
    """A section written in lower case (RWSData's): no capital letter outside brackets — the ``[R3]`` keys of a
    keyed copy are the system's, not the authors'."""
    return not re.search(r"[A-Z]", re.sub(r"\[[^\[\]]*\]", " ", text))


def citation_spans(text: str, lower: bool | None = None) -> list[tuple[int, int, list[str]]]:
    """Every citation of ``text`` as (start, end, works), in order; adjacent citations (nothing or ``;`` between
    them: ``[6][7]``, ``(a 2006);(b 2002)``, ``Smith et al. (2018); Roe et al. (2020)``) merged into one.
    ``lower``: read lower-case author names (default: when ``text`` has no capital letter)."""
    if lower is None:
        lower = is_lowercased(text)
    found: list[tuple[int, int, list[str]]] = []
    for match in _BRACKET.finditer(text):
        items = [item.strip() for item in re.split(r"[,;]", match.group(1))]
        works: list[str] = []
        for item in items:
            rng = _RANGE.match(item)
            if rng and 0 < int(rng.group(2)) - int(rng.group(1)) < 50:
                works += [str(i) for i in range(int(rng.group(1)), int(rng.group(2)) + 1)]
            elif _ANY_KEY.match(item):
                works.append(item.lower())
            else:
                works = []
                break
        if works:
            found.append((match.start(), match.end(), works))
    for match in _LATEX.finditer(text):
        works = [k.strip().lower() for k in match.group(1).split(",") if k.strip()]
        if works:
            found.append((match.start(), match.end(), works))
    for match in _PARENS.finditer(text):
        works = [w for item in _ITEM[lower].finditer(match.group(1))
                 for w in _work_name(item.group("first"), item.group("years"))]
        if works:
            found.append((match.start(), match.end(), works))
    if not lower:
        for match in _NARRATIVE.finditer(text):
            found.append((match.start(), match.end(), _work_name(match.group("first"), match.group("years"))))
    found.sort(key=lambda span: (span[0], -span[1]))
    spans: list[tuple[int, int, list[str]]] = []
    for start, end, works in found:
        if spans and start < spans[-1][1]:  # inside a citation already read: "(Smith, 2021; [1])"
            spans[-1][2].extend(w for w in works if w not in spans[-1][2])
            continue
        if spans and re.fullmatch(r"[\s;]*", text[spans[-1][1]:start]):
            spans[-1] = (spans[-1][0], end, spans[-1][2] + works)
        else:
            spans.append((start, end, works))
    return spans


def citation_groups(text: str) -> list[list[str]]:
    """Every citation in ``text``, in order, as the works it names, each normalised: keys ``[R3]`` → ``r3``,
    numbers ``[3-5]`` → ``3, 4, 5``, author–year ``(Smith et al., 2018; Doe and Roe, 2019a)`` and ``Smith et al.
    (2018, 2019b)`` → ``smith 2018`` (the first author's surname, its last word, lower-cased, accents folded;
    the year's letter kept), the lowercased ``(barzilay and mckeown 2001)`` → ``barzilay 2001``, ``\\cite{a,b}``
    → ``a, b``. Adjacent citations with nothing or ``;`` between them are one group. Lower-case author names are
    read only in a text with no capital letter (RWSData's lowercased sections); a bracket is a citation only when
    every item is a key, a number or a range (as :func:`find_citation_keys`)."""
    return [works for _, _, works in citation_spans(text)]


# ------------------------------------------------------------------ repeated markers
_REPEATED_KEY = re.compile(r"\[(R\d+)\](?:\s*\[\1\])+")
_BRACKET = re.compile(r"\[([^\[\]]+)\]")
_MARKER_RUN = re.compile(r"\[R\d+(?:\s*,\s*R\d+)*\](?:\s*\[R\d+(?:\s*,\s*R\d+)*\])+")


def merge_marker_runs(text: str) -> tuple[str, int]:
    """``[R7] [R5] [R7]`` → ``[R7, R5]``: a run of adjacent citations that names a key twice becomes one citation;
    returns the text and the keys removed (a run without a repeat stays as it is)."""
    removed = 0

    def merge(match: re.Match) -> str:
        nonlocal removed
        keys = re.findall(r"R\d+", match.group(0))
        unique = list(dict.fromkeys(keys))
        if len(unique) == len(keys):
            return match.group(0)
        removed += len(keys) - len(unique)
        return f"[{', '.join(unique)}]"

    return _MARKER_RUN.sub(merge, text), removed


def dedupe_markers(text: str) -> tuple[str, int]:
    """``[R2] [R2]`` → ``[R2]`` and ``[R2, R2, R3]`` → ``[R2, R3]``; returns the text and the markers removed."""
    removed = 0

    def adjacent(match: re.Match) -> str:
        nonlocal removed
        removed += match.group(0).count("[") - 1
        return f"[{match.group(1)}]"

    def inside(match: re.Match) -> str:
        nonlocal removed
        items = [i.strip() for i in re.split(r"[,;]", match.group(1))]
        if not all(re.fullmatch(r"R\d+", i) for i in items):
            return match.group(0)
        unique = list(dict.fromkeys(items))
        removed += len(items) - len(unique)
        return f"[{', '.join(unique)}]"

    text = _BRACKET.sub(inside, text)
    text = _REPEATED_KEY.sub(adjacent, text)
    return text, removed
