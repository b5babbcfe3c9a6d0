"""The written section as Markdown (``[key]`` citations and the list of cited works) and LaTeX (``\\cite{key}``
with the keys of the user's ``.bib``, special characters escaped), ready to ``\\input`` into the paper."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from crewlib.citations import find_citation_keys
from crewlib.data.records import RWGExample

_MARKER = re.compile(r"\[(\s*R\d+\s*(?:[,;]\s*R\d+\s*)*)\]")


def resolve_markers(text: str, key_to_id: Mapping[str, str], cite) -> tuple[str, list[str]]:
    """``text`` with every ``[R1, R3]`` replaced by ``cite(ids)``; the keys that resolve to no reference."""
    unresolved: list[str] = []

    def replace(match: re.Match) -> str:
        keys = find_citation_keys(match.group(0))
        ids = [key_to_id[k] for k in keys if k in key_to_id]
        unresolved.extend(k for k in keys if k not in key_to_id)
        return cite(list(dict.fromkeys(ids))) if ids else "[?]"

    return _MARKER.sub(replace, text), unresolved


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def author_names(authors: Sequence[str]) -> str:
    """"Smith", "Smith and Lee", "Smith et al." from "Smith, Ann" or "Ann Smith" names."""
    surnames = [a.split(",")[0].strip() if "," in a else a.split()[-1] for a in authors if a.strip()]
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
