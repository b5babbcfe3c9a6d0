"""``crew write``: the related-work section of the user's own paper, from a BibTeX file to Markdown and LaTeX.

The target is a title, an abstract and, optionally, the introduction; the references come from a
BibTeX file (parsed by ``bibtexparser``, each entry's ``abstract`` field used) or from a CSV, JSON
or JSONL file of ``key, title, abstract, authors, year``. A reference without an abstract is used by
its title (the convention of :func:`crewlib.tasks.title_only`), warned about and counted. Any
registered system writes (``crew`` by default; ``extractive`` needs no LLM) against the configured
LLM (the embedded model by default, any OpenAI-compatible endpoint by ``--base-url`` / ``--model``
or the ``CREW_LLM_*`` variables). Written to ``--out``:

- ``related_work.md``: the section, ``[R3]`` resolved to ``[key]``, and the cited references;
- ``related_work.tex``: the same with ``\\cite{key}`` (keys of the ``.bib``), LaTeX special characters escaped;
- ``generation.json`` (the system's output, notes and LLM calls), ``trace.json`` for the environment's
  systems (every round), ``ledger.csv`` and ``summary.json`` (calls, tokens, time, citation verification)::

    crew write --title "My paper" --abstract abstract.txt --bib refs.bib --out related_work/
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crewlib.citations import find_citation_keys
from crewlib.data.records import (
    RecordError,
    Reference,
    RWGExample,
    clean_field,
    reference_from_fields,
    with_introduction,
)

_FIELDS = ("key", "title", "abstract", "authors", "year")
_MARKER = re.compile(r"\[(\s*R\d+\s*(?:[,;]\s*R\d+\s*)*)\]")


class ReferenceFileError(ValueError):
    """A references file that cannot be used; the message names the file and every bad entry."""


@dataclass
class ReferenceList:
    references: list[Reference]
    source: str
    title_only: list[str] = field(default_factory=list)  # keys of references without an abstract (used by title)

    def report(self) -> str:
        text = f"{self.source}: {len(self.references)} references"
        if self.title_only:
            text += (f"; {len(self.title_only)} without an abstract, used by their title: "
                     + ", ".join(self.title_only[:10]) + (" ..." if len(self.title_only) > 10 else ""))
        return text


# ----------------------------------------------------------------------------- reading references
def read_references(path: str | Path) -> ReferenceList:
    """References from a ``.bib``, ``.csv``, ``.json`` or ``.jsonl`` file (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise ReferenceFileError(f"references file {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReferenceFileError(f"{path} is not UTF-8 text (byte {exc.start})") from exc
    if not text.strip():
        raise ReferenceFileError(f"{path} is empty: no references to write from")
    suffix = path.suffix.lower()
    if suffix == ".bib":
        return references_from_bibtex(text, str(path))
    if suffix == ".csv":
        return references_from_rows(_csv_rows(text), str(path))
    if suffix in (".json", ".jsonl"):
        return references_from_rows(_json_rows(text, str(path), lines=suffix == ".jsonl"), str(path))
    raise ReferenceFileError(f"{path}: unknown references format {suffix!r}; use .bib, .csv, .json or .jsonl")


def references_from_bibtex(text: str, source: str = "(bibtex)") -> ReferenceList:
    """References from BibTeX text: LaTeX decoded, braces removed; every bad entry named in one error."""
    import bibtexparser
    from bibtexparser.middlewares import LatexDecodingMiddleware

    library = bibtexparser.parse_string(text, append_middleware=[LatexDecodingMiddleware()])
    problems = []
    for block in library.failed_blocks:
        where = f"line {block.start_line + 1}"
        key = getattr(block, "key", None)
        if type(block).__name__ == "DuplicateBlockKeyBlock":
            problems.append(f"entry {key!r} ({where}): repeats the key of an earlier entry")
        else:
            raw = " ".join(block.raw.split())[:60]
            problems.append(f"unparsable entry at {where}: {raw!r} ({_first_line(getattr(block, 'error', ''))})")
    rows = []
    for entry in library.entries:
        fields = {k.lower(): v.value for k, v in entry.fields_dict.items()}
        rows.append({"key": entry.key, "title": fields.get("title"), "abstract": fields.get("abstract"),
                     "authors": fields.get("author"), "year": fields.get("year"), "_where": f"entry {entry.key!r}"})
    if not rows and not problems:
        raise ReferenceFileError(f"{source} holds no BibTeX entry")
    return references_from_rows(rows, source, problems)


def references_from_rows(rows: Iterable[Mapping], source: str = "(rows)",
                         problems: list[str] | None = None) -> ReferenceList:
    """References from mappings with ``key`` (or ``id``), ``title``, ``abstract``, ``authors``, ``year``."""
    problems = list(problems or [])
    references: list[Reference] = []
    title_only: list[str] = []
    seen: set[str] = set()
    for n, row in enumerate(rows, start=1):
        if "__unparsable__" in row:
            problems.append(row["__unparsable__"])
            continue
        key = clean_field(row.get("key") if row.get("key") not in (None, "") else row.get("id"))
        where = row.get("_where") or (f"entry {key!r}" if key else f"row {n}")
        if not key:
            problems.append(f"{where}: has no key")
            continue
        if key in seen:
            problems.append(f"{where}: repeats the key of an earlier entry")
            continue
        seen.add(key)
        title = clean_field(row.get("title"))
        if not title:
            problems.append(f"{where}: has no title")
            continue
        reference, by_title = reference_from_fields(key, title, row.get("abstract"), row.get("authors"),
                                                    row.get("year"))
        references.append(reference)
        if by_title:
            title_only.append(key)
    if problems:
        shown = "\n  ".join(problems[:20]) + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
        entries = "entry" if len(problems) == 1 else "entries"
        raise ReferenceFileError(f"{source}: {len(problems)} bad {entries}:\n  {shown}")
    if not references:
        raise ReferenceFileError(f"{source} holds no reference")
    return ReferenceList(references, source, title_only)


def _csv_rows(text: str) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if not ({"key", "id"} & set(fields)) or "title" not in fields:
        raise ReferenceFileError(f"a references CSV needs a header with key and title (and abstract, authors, year), "
                                 f"not {reader.fieldnames}")
    return [{k.strip().lower(): v for k, v in row.items() if k} for row in reader]


def _json_rows(text: str, source: str, *, lines: bool) -> list[dict]:
    if lines:
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError:
                    row = {"__unparsable__": f"line {n}: is not valid JSON"}
                rows.append(row if isinstance(row, dict) else {"__unparsable__": f"line {n}: is not a JSON object"})
        return rows
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReferenceFileError(f"{source} is not valid JSON: {exc}") from exc
    if isinstance(data, dict):
        data = data.get("references")
    if not isinstance(data, list):
        raise ReferenceFileError(f"{source}: expected a list of references (or an object with \"references\")")
    return [row if isinstance(row, dict) else {"__unparsable__": f"item {n}: is not a JSON object"}
            for n, row in enumerate(data, start=1)]


def _first_line(text) -> str:
    return str(text).strip().splitlines()[0] if str(text).strip() else "syntax error"


# ----------------------------------------------------------------------------- the target
def own_example(title: str, abstract: str, references: Sequence[Reference], introduction: str = "",
                introduction_words: int = 300) -> RWGExample:
    """The user's paper as an example without gold: the introduction's first ``introduction_words`` words,
    when given, follow the abstract (the target text every system reads). Its id is a digest of what it
    holds, so cached features and answers never mix two papers."""
    if not title.strip():
        raise ValueError("the target paper needs a title (--title)")
    if not abstract.strip():
        raise ValueError("the target paper needs an abstract (--abstract): the systems write for it")
    text = with_introduction(abstract, introduction, introduction_words)
    digest = hashlib.sha1(json.dumps([title, text, [(r.id, r.title, r.abstract) for r in references]])
                          .encode()).hexdigest()[:12]
    try:
        return RWGExample(f"own-{digest}", " ".join(title.split()), text, tuple(references)).validate(
            require_gold=False)
    except RecordError as exc:
        raise ValueError(str(exc)) from exc


# ----------------------------------------------------------------------------- writing
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


def to_markdown(example: RWGExample, text: str, key_to_id: Mapping[str, str], footer: str = "") -> str:
    """The section with ``[key]`` citations and the list of the references it cites."""
    body, _ = resolve_markers(text, key_to_id, lambda ids: "[" + "; ".join(ids) + "]")
    by_id = {r.id: r for r in example.references}
    cited = [i for i in dict.fromkeys(find_citation_keys(text)) if i in key_to_id]
    lines = [f"# Related work — {example.title}", "", body.strip() or "_(empty section)_", "", "## References", ""]
    for key in cited:
        ref = by_id[key_to_id[key]]
        authors = author_names(ref.authors)
        lines.append(f"- [{ref.id}] " + (f"{authors} " if authors else "") + (f"({ref.year}). " if ref.year else "")
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


@dataclass
class WriteResult:
    example: RWGExample
    generation: object  # crewlib.baselines.Generation
    summary: dict
    out: Path
    markdown: str
    latex: str

    @property
    def summary_line(self) -> str:
        s = self.summary
        verification = s["citation_verification"]
        share = ("no citation" if verification is None
                 else f"{verification:.0%} ({s['markers_resolved']}/{s['markers']})")
        tokens = s["prompt_tokens"] + s["completion_tokens"]
        return (f"{s['system']}: {s['calls']} LLM calls, {tokens:,} tokens, {s['wall_time_s']:.1f} s; citation "
                f"verification {share}; {s['cited']} of {s['references']} references cited; {s['words']} words")


def write_related_work(title: str, abstract: str, references: ReferenceList | Sequence[Reference], *,
                       params: dict, system: str = "crew", rounds: int | None = None, introduction: str = "",
                       out: str | Path = "related_work", progress: bool = False) -> WriteResult:
    """Write the related-work section of the user's paper with ``system``; the files of the module docstring.

    ``rounds``: a number, or ``auto`` (enough rounds to read every reference with an abstract, at most
    ``baselines.<system>.max_rounds``); None: auto for a system that has it (CREW), else its params.
    """
    from crewlib.baselines import make_system, system_class
    from crewlib.config import with_overrides
    from crewlib.llm import connect
    from crewlib.tasks import build_tasks

    refs = references.references if isinstance(references, ReferenceList) else list(references)
    title_only = references.title_only if isinstance(references, ReferenceList) else []
    block = params["baselines"].get(system, {})
    if rounds is None and "max_rounds" in block:
        rounds = "auto"  # crew write plays rounds that fit the pool (the demo and notebooks keep their fixed rounds)
    if rounds is not None:
        if "rounds" not in block:
            raise ValueError(f"--rounds: the system {system!r} plays no rounds")
        params = with_overrides(params, {"baselines": {system: {"rounds": rounds}}})  # validated: 0 is an error
    example = own_example(title, abstract, refs, introduction)
    task = build_tasks(params, [example], min_connections=0).tasks[example.target_id]
    client = connect(params) if system_class(system).uses_llm else None
    writer = make_system(system, params, client)
    bar = _round_bar(writer, task, progress)
    try:
        generation = writer.generate(example, task)
    finally:
        if bar is not None:
            bar.close()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trace = getattr(writer, "trace", None)
    if trace is not None:
        trace.save(out)  # trace.json (and its own related_work.md, replaced below)
    if client is not None:
        client.ledger.to_csv(out / "ledger.csv")
    (out / "generation.json").write_text(json.dumps(generation.to_dict(), indent=1, default=str) + "\n")
    check = generation.citation_check
    cost = generation.cost
    summary = {"system": system, "title": example.title, "target_id": example.target_id,
               "model": client.model if client else None, "endpoint": client.endpoint if client else None,
               "references": len(refs), "references_title_only": len(title_only), "title_only_keys": title_only,
               "cited": len(set(check.cited_ids)), "markers": check.markers, "markers_resolved": check.resolved,
               "citation_verification": check.verification, "unresolved_keys": sorted(set(check.unresolved_keys)),
               "calls": cost["calls"], "prompt_tokens": cost["prompt_tokens"],
               "completion_tokens": cost["completion_tokens"], "wall_time_s": round(generation.wall_s, 2),
               "fallbacks": dict(generation.fallbacks), "words": len(generation.text.split()),
               "rounds": generation.notes.get("rounds")}
    footer = (f"Written by {system}" + (f" with {summary['model']}" if summary["model"] else "") + ". "
              f"Citation verification: {check.resolved}/{check.markers} markers resolve"
              + (f"; known by their title only: {len(title_only)} of {len(refs)} references" if title_only else "")
              + ".")
    markdown = to_markdown(example, generation.text, generation.key_to_id, footer)
    latex = to_latex(example, generation.text, generation.key_to_id, header=footer)
    (out / "related_work.md").write_text(markdown)
    (out / "related_work.tex").write_text(latex)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return WriteResult(example, generation, summary, out, markdown, latex)


def _round_bar(writer, task, progress: bool):
    """A progress bar over the rounds of an environment system (one step for a single-prompt system)."""
    if not progress or not hasattr(writer, "rounds_for"):
        return None
    from tqdm import tqdm  # plain text bars: no widget (and no IProgress warning) in notebooks

    bar = tqdm(total=writer.rounds_for(task), desc=f"{writer.name} rounds", unit="round")
    writer.on_round = lambda t: bar.update(1)
    return bar


# ----------------------------------------------------------------------------- command line
def _text_or_file(value: str | None) -> str:
    if not value:
        return ""
    path = Path(value)
    if len(value) < 1024 and "\n" not in value and path.is_file():
        return path.read_text(encoding="utf-8")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from crewlib.baselines import SYSTEMS

    parser.add_argument("--title", required=True, help="the paper's title (text or a file)")
    parser.add_argument("--abstract", required=True, help="the paper's abstract (text or a file)")
    parser.add_argument("--introduction", default=None, help="optionally, its introduction (text or a file)")
    refs = parser.add_mutually_exclusive_group(required=True)
    refs.add_argument("--bib", help="a BibTeX file; each entry's abstract field is used")
    refs.add_argument("--references", help="a CSV, JSON or JSONL file of key, title, abstract, authors, year")
    parser.add_argument("--system", default="crew", choices=sorted(SYSTEMS), help="who writes (default: crew)")
    parser.add_argument("--params", default="quick", help="params mode or YAML path (default: quick)")
    parser.add_argument("--rounds", type=_rounds, default=None,
                        help="rounds for crew and the other round-based systems: a number >= 1, or auto (crew's "
                             "default: enough to read every reference with an abstract)")
    parser.add_argument("--out", default="related_work", help="output folder (default: ./related_work)")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint (default: the embedded model)")
    parser.add_argument("--model", default=None, help="the model name at --base-url")
    parser.add_argument("--api-key-env", default=None,
                        help="the NAME of the variable holding the endpoint's key (never the key itself)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _rounds(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of rounds >= 1 or auto")
    return number


def run_from_args(args: argparse.Namespace) -> int:
    from crewlib.baselines import SystemUnavailableError
    from crewlib.config import ParamsError, load_params
    from crewlib.llm import LLMError

    overrides: dict = {}
    if args.base_url or args.model or args.api_key_env is not None:
        overrides["llm"] = {k: v for k, v in (("provider", "openai" if args.base_url else None),
                                              ("base_url", args.base_url), ("model", args.model),
                                              ("api_key_env", args.api_key_env)) if v is not None}
    try:
        params = load_params(args.params, overrides or None)
        references = read_references(args.bib or args.references)
        for key in references.title_only:
            print(f"warning: reference {key!r} has no abstract; it is used by its title", file=sys.stderr)
        result = write_related_work(_text_or_file(args.title), _text_or_file(args.abstract), references,
                                    params=params, system=args.system, rounds=args.rounds,
                                    introduction=_text_or_file(args.introduction), out=args.out,
                                    progress=not args.quiet)
    except (ReferenceFileError, LLMError, SystemUnavailableError, ParamsError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(result.markdown)
    print(references.report())
    print(result.summary_line)
    print(f"written: {result.out}/related_work.md, related_work.tex, generation.json, summary.json"
          + (", trace.json" if (result.out / "trace.json").exists() else "")
          + (", ledger.csv" if (result.out / "ledger.csv").exists() else ""))
    return 0
