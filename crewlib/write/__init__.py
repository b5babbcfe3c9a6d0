"""``crew write``: the related-work section of the user's own paper, from its references to Markdown and LaTeX.

The paper is a title, an abstract and, optionally, the introduction, given as text or files or read
from its LaTeX source (``--tex``, :mod:`crewlib.write.latex_paper`); the references come from a
BibTeX, CSV, JSON or JSONL file (:mod:`crewlib.write.reference_files`), optionally a whole library
of which the K most relevant are kept (``--select``, :mod:`crewlib.write.library`). Any registered
system writes (``crew`` by default; ``extractive`` needs no LLM) against the configured LLM (the
embedded model by default, any OpenAI-compatible endpoint by ``--base-url`` / ``--model`` or the
``CREW_LLM_*`` variables; :mod:`crewlib.write.writer`). Written to ``--out``
(:mod:`crewlib.write.render`):

- ``related_work.md``: the section, ``[R3]`` resolved to ``[key]``, and the cited references;
- ``related_work.tex``: the same with ``\\cite{key}`` (keys of the ``.bib``), LaTeX special characters escaped,
  ready to ``\\input`` into the paper;
- ``generation.json`` (the system's output, notes and LLM calls), ``trace.json`` for the environment's
  systems (every round), ``ledger.csv`` and ``summary.json`` (calls, tokens, time, citation verification)::

    crew write --tex paper/main.tex --out related_work/
    crew write --title "My paper" --abstract abstract.txt --bib refs.bib --out related_work/
"""

from crewlib.write.latex_paper import LatexPaper, LatexPaperError, read_latex_paper
from crewlib.write.library import select_references
from crewlib.write.out_folder import OutputFolderError
from crewlib.write.reference_files import ReferenceFileError, ReferenceList, read_references, references_from_rows
from crewlib.write.render import author_names, latex_escape, resolve_markers, to_latex, to_markdown
from crewlib.write.writer import WriteFailed, WriteResult, own_example, write_related_work

__all__ = ["LatexPaper", "LatexPaperError", "OutputFolderError", "ReferenceFileError", "ReferenceList", "WriteFailed",
           "WriteResult", "author_names", "latex_escape", "own_example", "read_latex_paper", "read_references",
           "references_from_rows", "resolve_markers", "select_references", "to_latex", "to_markdown",
           "write_related_work"]
