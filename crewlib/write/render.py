"""The written section as Markdown (``[key]`` citations and the list of cited works) and LaTeX (``\\cite{key}``
with the keys of the user's ``.bib``, special characters escaped), ready to ``\\input`` into the paper."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from crewlib.citations import KEY, find_citation_keys
from crewlib.data.records import MATH_SPAN, RWGExample, surname
from crewlib.text import sentences

_MARKER = re.compile(rf"\[(\s*{KEY}\s*(?:[,;]\s*{KEY}\s*)*)\]")


def resolve_markers(text: str, key_to_id: Mapping[str, str], cite) -> tuple[str, list[str]]:
    """``text`` with every ``[R1, R3]`` replaced by ``cite(ids)``; the keys that resolve to no reference."""
    unresolved: list[str] = []

    def replace(match: re.Match) -> str:
        keys = find_citation_keys(match.group(0))
        ids = [key_to_id[k] for k in keys if k in key_to_id]
        unresolved.extend(k for k in keys if k not in key_to_id)
        return cite(list(dict.fromkeys(ids))) if ids else "[?]"

    return _MARKER.sub(replace, text), unresolved


_RAW_CITE = re.compile(r"\s*~?\\(?:cite[a-zA-Z]*|citep|citet)\*?(?:\[[^\]]*\])*\{[^}]*\}")


def without_unknown_citations(text: str, key_to_id: Mapping[str, str]) -> tuple[str, list[str], int]:
    """``text`` with every citation of a key the pool does not hold taken out, so that none reaches the section as
    ``[?]`` or as raw LaTeX: an unknown key leaves the marker that also cites a known work; a sentence citing only
    unknown keys (``[R99]``, a ``\\cite{nonexistent}`` the model wrote) is removed. Returns the text, the unknown
    keys (and raw citations) and the number of sentences removed."""
    unknown: list[str] = []
    removed = 0
    kept_paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        kept = []
        for sentence in sentences(paragraph):
            raw = [m.group(0).strip() for m in _RAW_CITE.finditer(sentence)]
            cited = find_citation_keys(sentence)
            missing = [k for k in cited if k not in key_to_id]
            if not raw and not missing:
                kept.append(sentence)
                continue
            unknown += missing + raw
            if len(missing) == len(cited):  # nothing known left to cite
                removed += 1
                continue
            kept.append(_MARKER.sub(lambda m: _known_marker(m, key_to_id), _RAW_CITE.sub("", sentence)))
        if kept:
            kept_paragraphs.append(" ".join(kept))
    return "\n\n".join(kept_paragraphs), list(dict.fromkeys(unknown)), removed


def _known_marker(match: re.Match, key_to_id: Mapping[str, str]) -> str:
    known = [k for k in find_citation_keys(match.group(0)) if k in key_to_id]
    return f"[{', '.join(known)}]" if known else ""


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped, its inline math (``$\\mathcal{O}(n^2)$``, kept as the
    references wrote it) left as math."""
    parts = MATH_SPAN.split(text)  # odd items are math
    return "".join(p if i % 2 and _is_math(p) else "".join(_LATEX_SPECIAL.get(c, c) for c in p)
                   for i, p in enumerate(parts))


def _is_math(span: str) -> bool:
    """A ``$...$`` span that is math: TeX in it, or one token ("$n$", "$O(n)$"); "$5 and $6" is two prices."""
    return bool(re.search(r"[\\^_{}]", span)) or not re.search(r"\s", span)


def author_names(authors: Sequence[str]) -> str:
    """"Smith", "Smith and Lee", "Smith et al." from "Smith, Ann" or "Ann Smith" names."""
    surnames = [surname(a) for a in authors if a.strip()]
    if len(surnames) > 2:
        return f"{surnames[0]} et al."
    return " and ".join(surnames)


def to_markdown(example: RWGExample, text: str, key_to_id: Mapping[str, str], footer: str = "",
                years: Mapping[str, str] | None = None) -> str:
    """The section with ``[key]`` citations and the list of the references it cites (``years``: a year as the
    user wrote it, for one that is not a number)."""
    body, _ = resolve_markers(text, key_to_id, lambda ids: "[" + "; ".join(ids) + "]")
    by_id = {r.id: r for r in example.references}
    cited = [i for i in dict.fromkeys(find_citation_keys(text)) if i in key_to_id]
    lines = [f"# Related work — {example.title}", "", body.strip() or "_(empty section)_", "", "## References", ""]
    for key in cited:
        ref = by_id[key_to_id[key]]
        authors = author_names(ref.authors)
        year = ref.year or (years or {}).get(ref.id)
        lines.append(f"- [{ref.id}] " + (f"{authors} " if authors else "") + (f"({year}). " if year else "")
                     + ref.title + ".")
    if footer:
        lines += ["", f"_{footer}_"]
    return "\n".join(lines) + "\n"


def to_latex(example: RWGExample, text: str, key_to_id: Mapping[str, str], header: str = "") -> str:
    """The section as LaTeX: ``\\cite{key}`` with the references' own keys, special characters escaped."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip()):
        block = " ".join(block.split())
        if not block:
            continue
        heading = re.match(r"^#+\s*(.*)$", block)
        if heading:
            paragraphs.append(r"\paragraph{" + latex_escape(heading.group(1).strip("* ")) + "}")
            continue
        block = re.sub(r"\*\*([^*]+)\*\*", r"\1", block)
        parts, last = [], 0
        for match in _MARKER.finditer(block):  # escape the prose, not the citations
            parts.append(latex_escape(block[last:match.start()]))
            cited, _ = resolve_markers(match.group(0), key_to_id, lambda ids: r"\cite{" + ",".join(ids) + "}")
            parts.append(cited)
            last = match.end()
        parts.append(latex_escape(block[last:]))
        paragraphs.append("".join(parts))
    lines = ([f"% {line}" for line in header.splitlines()] if header else []) + [r"\section{Related Work}", "", ""]
    return "\n".join(lines) + "\n\n".join(paragraphs) + "\n"
