"""``crew write --tex main.tex``: the user's paper read from its LaTeX source.

The title is ``\\title{...}``, the abstract the ``abstract`` environment, the introduction the
section named Introduction (up to the next ``\\section``); a paper whose introduction is not so
named (``\\section{Motivation}``, or no sections) takes it from ``--introduction``
(``need_introduction=False``). ``\\input{f}``, ``\\input f`` and ``\\include{f}`` files are followed
(relative to the main file's folder, ``.tex`` added when missing); ``%`` comments and
``\\begin{comment} ... \\end{comment}`` blocks are dropped first, so nothing inside them is read or
followed. The references are every file ``\\bibliography{a,b}`` and ``\\addbibresource{...}`` name,
in order (each must exist), unless the caller gives one. LaTeX becomes plain text by ``pylatexenc``
(already installed with ``bibtexparser``): ``\\cite``, ``\\ref`` and ``\\label`` removed, math kept as
written. Anything that cannot be found is an error naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from crewlib.data.records import MATH_SPAN
from crewlib.write.reference_files import ReferenceFileError, read_text_file

# \input{f}, \include{f}, or TeX's own \input f (the name ends at a space; \inputencoding is not one)
_INPUT = re.compile(r"\\(?:input|include)\s*\{([^}]+)\}|\\input\s+([^\s{}\\%]+)")
_COMMENT = re.compile(r"(?<!\\)%.*")
# the comment package's environment (to the end of the file when it is not closed, as the package does)
_COMMENT_BLOCK = re.compile(r"\\begin\{comment\}.*?(?:\\end\{comment\}|\Z)", re.DOTALL)
_BIBLIOGRAPHY = re.compile(r"\\(?:addbibresource|bibliography)\s*(?:\[[^\]]*\])?\{([^}]+)\}")
_DROPPED = re.compile(r"~?\\(?:cite[a-zA-Z]*|citep|citet|ref|eqref|autoref|cref|Cref|label)\*?(?:\[[^\]]*\])*\{[^}]*\}")
_REF_PHRASE = re.compile(r"(?:\b(?:Sections?|Sec\.|Figures?|Fig\.|Tables?|Appendix|Eq\.|Equation)\s*~?\s*)"
                         r"\\(?:ref|eqref|autoref|cref|Cref)\{[^}]*\}")
_EMPTY_PARENS = re.compile(r"\s*\(\s*\)")


class LatexPaperError(ReferenceFileError):
    """A LaTeX paper that lacks a piece ``crew write`` needs; the message names the piece and the file."""


@dataclass(frozen=True)
class LatexPaper:
    path: Path
    title: str
    abstract: str
    introduction: str  # "" when the paper has no section named Introduction and the caller gives one
    bibs: tuple[Path, ...]  # the references files the source names, in order (empty: it names none)

    @property
    def bib(self) -> Path | None:
        """The first references file the source names (None: it names none); ``bibs`` holds them all."""
        return self.bibs[0] if self.bibs else None


def read_latex_paper(path: str | Path, *, need_bib: bool = True, need_introduction: bool = True) -> LatexPaper:
    """Title, abstract, introduction and ``.bib`` files of the paper whose main file is ``path`` (module docstring).
    ``need_bib``/``need_introduction`` False: the caller has its own, so a source without one is no error."""
    path = Path(path).expanduser()
    source = _expand_inputs(read_text_file(path, "LaTeX file"), path.parent, path, depth=0)
    missing = []
    title = _command_argument(source, "title")
    abstract = _environment(source, "abstract")
    introduction = _section(source, "introduction")
    if not title:
        missing.append("a \\title{...}")
    if not abstract:
        missing.append("an abstract (\\begin{abstract} ... \\end{abstract})")
    if need_introduction and not introduction:
        missing.append("a section named Introduction (\\section{Introduction}; or give --introduction, text or a "
                       "file, when the paper's introduction has another name)")
    bibs, absent = _bibliography(source, path.parent)
    if need_bib and absent:
        missing.append(", ".join(str(p) for p in absent) + " (named by \\bibliography or \\addbibresource; or give "
                       "--bib)")
    elif need_bib and not bibs:
        missing.append("a references file (\\bibliography{refs} or \\addbibresource{refs.bib} naming a file "
                       "that exists; or give --bib)")
    if missing:
        raise LatexPaperError(f"{path}: could not find " + "; ".join(missing))
    return LatexPaper(path, latex_to_text(title), latex_to_text(abstract), latex_to_text(introduction), bibs)


def latex_to_text(latex: str) -> str:
    """Plain text of a LaTeX fragment: commands rendered by pylatexenc, math kept as written, whitespace collapsed."""
    from pylatexenc.latex2text import LatexNodes2Text

    converter = LatexNodes2Text(math_mode="verbatim")
    parts = MATH_SPAN.split(_DROPPED.sub("", _REF_PHRASE.sub("", latex)))
    text = "".join(p if i % 2 else converter.latex_to_text(p) for i, p in enumerate(parts))
    return " ".join(_EMPTY_PARENS.sub("", text).split())


def _expand_inputs(text: str, folder: Path, origin: Path, depth: int) -> str:
    """``text`` without its comments, each ``\\input``/``\\include`` replaced by its file's text (expanded too)."""
    if depth > 10:
        raise LatexPaperError(f"{origin}: \\input nested more than 10 deep (a file that inputs itself?)")
    text = "\n".join(_COMMENT.sub("", line) for line in text.splitlines())
    text = _COMMENT_BLOCK.sub("", text)  # after the % comments: a "% \begin{comment}" begins nothing

    def include(match: re.Match) -> str:
        name = (match.group(1) or match.group(2)).strip()
        child = folder / name
        if not child.suffix:
            child = child.with_suffix(".tex")
        if not child.is_file():
            raise LatexPaperError(f"{origin}: \\input{{{name}}} names {child}, which does not exist")
        return _expand_inputs(read_text_file(child, "LaTeX file"), folder, child, depth + 1)

    return _INPUT.sub(include, text)


def _balanced(text: str, start: int) -> str | None:
    """The text inside the brace group opening at ``text[start] == "{"``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{" and text[i - 1:i] != "\\":
            depth += 1
        elif text[i] == "}" and text[i - 1:i] != "\\":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return None


def _command_argument(text: str, command: str) -> str:
    match = re.search(r"\\" + command + r"\s*(?:\[[^\]]*\])?\s*\{", text)
    return (_balanced(text, match.end() - 1) or "").strip() if match else ""


def _environment(text: str, name: str) -> str:
    match = re.search(r"\\begin\{" + name + r"\}(.*?)\\end\{" + name + r"\}", text, re.DOTALL)
    return match.group(1).strip() if match else ""


def _section(text: str, name: str) -> str:
    match = re.search(r"\\section\*?\s*\{\s*" + name + r"\s*\}", text, re.IGNORECASE)
    if not match:
        return ""
    rest = text[match.end():]
    end = re.search(r"\\(?:section|chapter|bibliography|printbibliography|end\{document\}|appendix)\b", rest)
    return (rest[:end.start()] if end else rest).strip()


def _bibliography(text: str, folder: Path) -> tuple[tuple[Path, ...], list[Path]]:
    """The ``.bib`` files that ``\\bibliography{a,b}`` and every ``\\addbibresource`` name, in order: those that
    exist (resolved, each once) and those that do not."""
    names = [n.strip() for m in _BIBLIOGRAPHY.finditer(text) for n in m.group(1).split(",") if n.strip()]
    found: list[Path] = []
    absent: list[Path] = []
    for name in names:
        path = folder / name
        if path.suffix != ".bib":
            path = path.with_name(path.name + ".bib")
        if not path.is_file():
            absent.append(path)
        elif path.resolve() not in found:
            found.append(path.resolve())
    return tuple(found), absent
