"""The user's references: a BibTeX, CSV, JSON or JSONL file read as :class:`ReferenceList`.

Files are read as people save them: UTF-8 with or without a byte-order mark (Excel's "CSV UTF-8"
writes one); another encoding is an error naming the file. BibTeX is read as BibTeX reads it
(:func:`bibtex_entries`): the entries of several files (``\\bibliography{strings,refs}``) form one
database, so ``@string`` macros of one serve the others; macros, ``#`` concatenation and the month
names (``month = jan``) are resolved; an entry with ``crossref`` inherits the fields it lacks (the
parent's title as its ``booktitle``), and a crossref'd ``@proceedings`` volume is not itself a
reference; ``author`` is split on the "and" outside braces, so a braced corporate author
(``{{World Health Organization}}``) is one author, kept whole. LaTeX is decoded by ``pylatexenc``;
LaTeX math (``$\\mathcal{O}(n)$``) is kept as written. An entry whose field swallowed the next one
(a missing comma: ``title = {X} author = {Y}``), an undefined macro in a title, abstract or author,
a crossref to no entry, and a key repeated (in one file or across files, both named) are errors
naming the entry; a year that is not a number (``forthcoming``) is kept as written in the rendered
list and warned about; an entry without an abstract is used by its title
(:func:`crewlib.tasks.title_only`). In CSV, JSON and JSONL files a field that is not text (a JSON
object, or a list anywhere but ``authors``) is an error naming the entry and the field, never
stringified. Every bad entry is named in one error, not only the first.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import bibtexparser
from bibtexparser.middlewares.names import split_multiple_persons_names
from bibtexparser.model import DuplicateBlockKeyBlock, Entry, ParsingFailedBlock, String
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

from crewlib import CrewError
from crewlib.data.records import Reference, clean_field, reference_from_fields

# BibTeX fields whose "name =" inside another field's value means a comma was missing between the two
_BIB_FIELDS = ("author", "title", "year", "abstract", "journal", "booktitle", "editor", "pages", "volume", "number",
               "publisher", "url", "doi", "month", "note", "eprint", "archiveprefix", "primaryclass", "keywords",
               "address", "organization", "school", "series", "isbn", "issn", "howpublished", "institution")
# a value's closing brace, quote or number, then the next "field =" without the comma between them
_SWALLOWED = re.compile(r"(?:[}\"]|\b\d+)\s+(" + "|".join(_BIB_FIELDS) + r")\s*=\s*[{\"\w]", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[89]\d{2}|20\d{2})\b")
# the month macros every BibTeX style defines (``month = jan``)
_MONTHS = dict(zip(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
                   ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                    "October", "November", "December"), strict=True))
_MACRO_CHECKED = ("title", "abstract", "author")  # an undefined macro here is an error; elsewhere kept as written
# crossref parents that are volumes holding the cited works, not works the paper cites
_VOLUMES = frozenset({"proceedings", "mvproceedings", "collection", "mvcollection", "mvbook", "mvreference"})
_NOT_INHERITED = frozenset({"crossref", "title", "abstract", "ids"})  # the volume's title becomes the booktitle
_TEXT_FIELDS = ("key", "id", "title", "abstract", "year")  # a reference row's fields that must be text (or a number)


class ReferenceFileError(CrewError, ValueError):
    """A references file that cannot be used; the message names the file and every bad entry."""


@dataclass
class ReferenceList:
    references: list[Reference]
    source: str
    title_only: list[str] = field(default_factory=list)  # keys of references without an abstract (used by title)
    years_as_written: dict[str, str] = field(default_factory=dict)  # key -> a year that is not a number

    def report(self) -> str:
        text = f"{self.source}: {len(self.references)} references"
        if self.title_only:
            text += (f"; {len(self.title_only)} without an abstract, used by their title: "
                     + ", ".join(self.title_only[:10]) + (" ..." if len(self.title_only) > 10 else ""))
        return text

    def warnings(self) -> list[str]:
        """One line per reference a user should look at (no abstract, a year that is not a number)."""
        lines = [f"reference {key!r} has no abstract; it is used by its title" for key in self.title_only]
        lines += [f"reference {key!r} has the year {year!r}, not a number; it is kept as written"
                  for key, year in self.years_as_written.items()]
        return lines


def read_text_file(path: str | Path, what: str) -> str:
    """A user's text file, UTF-8 with or without a byte-order mark; errors name ``what`` and the file."""
    path = Path(path).expanduser()
    if not path.is_file():
        problem = "is not a file" if path.exists() else "does not exist"
        raise ReferenceFileError(f"{what} {path} {problem}")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReferenceFileError(f"{what} {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc


def read_references(path: str | Path) -> ReferenceList:
    """References from a ``.bib``, ``.csv``, ``.json`` or ``.jsonl`` file (module docstring)."""
    path = Path(path).expanduser()
    text = read_text_file(path, "references file")
    if not text.strip():
        raise ReferenceFileError(f"{path} is empty: no references to write from")
    suffix = path.suffix.lower()
    if suffix == ".bib":
        return references_from_bibtex(text, str(path))
    if suffix == ".csv":
        return references_from_rows(_csv_rows(text, str(path)), str(path))
    if suffix in (".json", ".jsonl"):
        return references_from_rows(_json_rows(text, str(path), lines=suffix == ".jsonl"), str(path))
    raise ReferenceFileError(f"{path}: unknown references format {suffix!r}; use .bib, .csv, .json or .jsonl")


@dataclass(frozen=True)
class BibEntry:
    """One BibTeX entry as BibTeX reads it (module docstring): ``fields`` by lower-case name with macros, ``#``
    and ``crossref`` resolved and LaTeX decoded; ``authors`` split on the "and" outside braces, each decoded."""

    key: str
    kind: str  # the entry type, lower-case: "article", "inproceedings", ...
    fields: dict[str, str]
    authors: tuple[str, ...]
    where: str  # "line 3", or "refs.bib line 3" when several files are read


@dataclass
class _RawEntry:
    """An entry as written (values with their braces, quotes and macros) while macros and crossref are resolved."""

    key: str
    kind: str
    fields: dict[str, str]
    where: str
    raw: str


def read_bibtex_files(paths: Sequence[str | Path]) -> ReferenceList:
    """References from ``.bib`` files read in order as one database, as BibTeX reads ``\\bibliography{a,b}``:
    a macro of one serves the others, a key in two is an error naming both files."""
    paths = [Path(p).expanduser() for p in paths]
    if not paths:
        raise ReferenceFileError("no BibTeX file given")
    texts = [(str(p) if len(paths) > 1 else "", read_text_file(p, "references file")) for p in paths]
    return _bibtex_references(texts, " + ".join(str(p) for p in paths))


def references_from_bibtex(text: str, source: str = "(bibtex)") -> ReferenceList:
    """References from BibTeX text (module docstring); every bad entry named in one error."""
    return _bibtex_references([("", text)], source)


def _bibtex_references(texts: Sequence[tuple[str, str]], source: str) -> ReferenceList:
    entries, problems = bibtex_entries(texts)
    if not entries and not problems:
        raise ReferenceFileError(f"{source} holds no BibTeX entry")
    rows = [{"key": e.key, "title": e.fields.get("title"), "abstract": e.fields.get("abstract"),
             "authors": list(e.authors), "year": e.fields.get("year"), "_where": f"entry {e.key!r}"} for e in entries]
    return references_from_rows(rows, source, problems)


def bibtex_entries(texts: Sequence[tuple[str, str]]) -> tuple[list[BibEntry], list[str]]:
    """The entries of BibTeX ``texts`` and one line per problem found. ``texts``: (file name, text) pairs read in
    order as one database (the name labels an entry's line; "" for a single text)."""
    raw_entries, strings, problems = _parse_bibtex(texts)
    macros = dict(_MONTHS)
    for name, value in strings:  # in order: a macro may use those defined before it; a redefinition wins
        macros[name.lower()] = _resolve_value(value, macros)[0]
    for entry in raw_entries:
        problems += _resolve_fields(entry, macros)
    entries = []
    for entry in _inherit_crossrefs(raw_entries, problems):
        try:
            decoded = {name: _latex_decoder().latex_to_text(value) for name, value in entry.fields.items()}
            authors = tuple(_latex_decoder().latex_to_text(name) + ("," if _corporate(name) else "")
                            for name in _author_names(entry.fields))
        except Exception as exc:  # pylatexenc is tolerant; what it still refuses is named here
            problems.append(f"entry {entry.key!r}: its LaTeX cannot be read ({_first_line(exc)})")
            continue
        entries.append(BibEntry(entry.key, entry.kind, decoded, authors, entry.where))
    return entries, problems


def _parse_bibtex(texts: Sequence[tuple[str, str]]) -> tuple[list[_RawEntry], list[tuple[str, str]], list[str]]:
    """The entries as written, the ``@string`` definitions in order, and a line for each block that failed to
    parse or repeats an earlier key (naming where the first one is)."""
    entries: list[_RawEntry] = []
    strings: list[tuple[str, str]] = []
    problems: list[str] = []
    first: dict[str, str] = {}  # key -> where its first entry is
    for name, text in texts:
        with _quiet_bibtexparser():  # its own log lines would come before the error that names every entry
            library = bibtexparser.parse_string(text.lstrip("\ufeff"), parse_stack=[])  # values as written
        for block in library.blocks:
            where = _place(name, block.start_line)
            if isinstance(block, DuplicateBlockKeyBlock) and block.ignore_error_block is not None:
                block = block.ignore_error_block  # a repeated @string wins; a repeated entry is named below
            if isinstance(block, String):
                strings.append((block.key, str(block.value)))
            elif isinstance(block, Entry) and block.key in first:
                problems.append(f"entry {block.key!r} ({where}): repeats the key of the entry at {first[block.key]}")
            elif isinstance(block, Entry):
                first[block.key] = where
                fields = {k.lower(): str(v.value) for k, v in block.fields_dict.items()}
                entries.append(_RawEntry(block.key, block.entry_type.lower(), fields, where, block.raw or ""))
            elif isinstance(block, ParsingFailedBlock):
                raw = " ".join((block.raw or "").split())[:60]
                problems.append(f"unparsable entry at {where}: {raw!r} ({_first_line(getattr(block, 'error', ''))})")
    return entries, strings, problems


@contextmanager
def _quiet_bibtexparser():
    """bibtexparser's logger silenced below errors while it parses: the problems it finds are named in our error."""
    logger = logging.getLogger("bibtexparser")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _place(name: str, line: int | None) -> str:
    at = f"line {line + 1}" if line is not None else "an unknown line"
    return f"{name} {at}" if name else at


def _resolve_fields(entry: _RawEntry, macros: Mapping[str, str]) -> list[str]:
    """Resolve ``entry``'s values in place; the problems: a field that swallowed the next (a missing comma), an
    undefined macro in a field the reference is made of."""
    problems = []
    swallowed = _swallowed_field(entry.raw, entry.fields)
    if swallowed:
        problems.append(f"entry {entry.key!r}: its field {swallowed[0]!r} holds {swallowed[1]!r} = ... "
                        f"(a missing comma between two fields?)")
    resolved = {}
    for name, value in entry.fields.items():
        resolved[name], undefined = _resolve_value(value, macros)
        if undefined and name in _MACRO_CHECKED:
            problems.append(f"entry {entry.key!r}: its field {name!r} uses the macro {undefined[0]!r}, which no "
                            "@string defines")
    entry.fields = resolved
    return problems


def _resolve_value(value: str, macros: Mapping[str, str]) -> tuple[str, list[str]]:
    """A value as written (``{...}``, ``"..."``, a number or a macro, joined by ``#``) as text, its inner braces
    kept for the LaTeX decoder; and the macros it names that no ``@string`` defines (kept as written)."""
    text, undefined = [], []
    for piece in (p.strip() for p in _concatenated(value)):
        if len(piece) >= 2 and (piece[0], piece[-1]) in (("{", "}"), ('"', '"')):
            text.append(piece[1:-1])
        elif piece.isdigit() or piece.lower() in macros:
            text.append(macros.get(piece.lower(), piece))
        elif piece:
            undefined.append(piece)
            text.append(piece)
    return "".join(text), undefined


def _concatenated(value: str) -> list[str]:
    """The parts of a value joined by ``#`` outside braces and quotes (``{C# code}`` is one part)."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(value):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == '"' and depth == 0:
            quoted = not quoted
        elif char == "#" and depth == 0 and not quoted:
            parts.append(value[start:i])
            start = i + 1
    return [*parts, value[start:]]


def _inherit_crossrefs(entries: list[_RawEntry], problems: list[str]) -> list[_RawEntry]:
    """``entries``, each ``crossref`` child given the fields it lacks from its parent (one level, as BibTeX; the
    parent's title as its ``booktitle``); without the parents that are volumes (``@proceedings``)."""
    by_key = {e.key.lower(): e for e in entries}  # BibTeX matches crossref keys ignoring case
    volumes = set()
    for entry in entries:
        name = entry.fields.get("crossref", "").strip()
        if not name:
            continue
        parent = by_key.get(name.lower())
        if parent is None:
            problems.append(f"entry {entry.key!r}: its crossref {name!r} names no entry")
            continue
        inherited = {k: v for k, v in parent.fields.items() if k not in _NOT_INHERITED}
        if parent.fields.get("title"):
            inherited.setdefault("booktitle", parent.fields["title"])
        entry.fields = {**inherited, **entry.fields}
        if parent.kind in _VOLUMES:
            volumes.add(parent.key)
    return [e for e in entries if e.key not in volumes]


def _author_names(fields: Mapping[str, str]) -> list[str]:
    """The names of ``author``, split on the "and" outside braces (``{Barnes and Noble}`` is one name); a name
    not wholly braced is also split on ";" (a common non-BibTeX habit, read as before)."""
    names = split_multiple_persons_names(fields.get("author", ""))
    return [part for name in names for part in ([name] if _corporate(name) else name.split(";"))]


def _corporate(name: str) -> bool:
    """A wholly braced name (``{World Health Organization}``): one body, kept whole. It is stored as BibTeX's
    "Last, First" with no first name ("World Health Organization,"), so that :func:`crewlib.data.records.surname`
    gives it whole."""
    return name.startswith("{") and name.endswith("}")


@lru_cache(maxsize=1)
def _latex_decoder() -> LatexNodes2Text:
    """pylatexenc's decoder as bibtexparser's ``LatexDecodingMiddleware`` builds it: math kept as written, braces
    removed, ``\\url{x}`` as ``x``. Built once: building it reads pylatexenc's tables."""
    context = get_default_latex_context_db()
    context.add_context_category("crew-bibtex", prepend=True, macros=[MacroTextSpec("url", simplify_repl="%s")])
    return LatexNodes2Text(latex_context=context, math_mode="verbatim")


def _swallowed_field(raw: str, fields: Mapping[str, str]) -> tuple[str, str] | None:
    """(field, swallowed field) when a field's value ran on into the next ``name = value`` for want of a comma:
    seen in the entry's source, confirmed by the name appearing inside a parsed value."""
    for match in _SWALLOWED.finditer(raw):
        name = match.group(1)
        for holder, value in fields.items():
            if re.search(rf"\b{name}\s*=", str(value), re.IGNORECASE):
                return holder, name.lower()
    return None


def references_from_rows(rows: Iterable[Mapping], source: str = "(rows)",
                         problems: list[str] | None = None) -> ReferenceList:
    """References from mappings with ``key`` (or ``id``), ``title``, ``abstract``, ``authors``, ``year``."""
    problems = list(problems or [])
    references: list[Reference] = []
    title_only: list[str] = []
    years: dict[str, str] = {}
    seen: set[str] = set()
    for n, row in enumerate(rows, start=1):
        if "__unparsable__" in row:
            problems.append(row["__unparsable__"])
            continue
        key = _row_key(row)
        problem = _row_problem(row, key, n, seen)
        seen.add(key)
        if problem:
            problems.append(problem)
            continue
        title = clean_field(row.get("title"))
        reference, by_title = reference_from_fields(key, title, row.get("abstract"), row.get("authors"),
                                                    row.get("year"))
        year = clean_field(row.get("year"))
        if year and not _YEAR.fullmatch(year):
            years[key] = year
        references.append(reference)
        if by_title:
            title_only.append(key)
    if problems:
        shown = "\n  ".join(problems[:20]) + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
        entries = "entry" if len(problems) == 1 else "entries"
        raise ReferenceFileError(f"{source}: {len(problems)} bad {entries}:\n  {shown}")
    if not references:
        raise ReferenceFileError(f"{source} holds no reference")
    return ReferenceList(references, source, title_only, years)


def _row_key(row: Mapping) -> str:
    """A row's ``key``, else its ``id`` ("" when neither is text)."""
    value = row.get("key") if row.get("key") not in (None, "") else row.get("id")
    return clean_field(value) if _is_text(value) else ""


def _row_problem(row: Mapping, key: str, n: int, seen: set[str]) -> str | None:
    """Why row ``n`` cannot be a reference (a field that is not text, no key, a repeated key, no title), or None."""
    where = row.get("_where") or (f"entry {key!r}" if key else f"row {n}")
    not_text = _not_text(row)
    if not_text:
        return f"{where}: " + "; ".join(not_text)
    if not key:
        return f"{where}: has no key"
    if key in seen:
        return f"{where}: repeats the key of an earlier entry"
    return None if clean_field(row.get("title")) else f"{where}: has no title"


def _not_text(row: Mapping) -> list[str]:
    """A line per field that is not text (a JSON object or list where a string or number belongs; ``authors``
    may be a list of names): refused, since its Python spelling would become the reference's text."""
    bad = [(name, row[name], "text") for name in _TEXT_FIELDS if not _is_text(row.get(name))]
    authors = row.get("authors")
    if not (_is_text(authors) or isinstance(authors, list | tuple) and all(isinstance(a, str) for a in authors)):
        bad.append(("authors", authors, "a name or a list of names"))
    lines = []
    for name, value, wanted in bad:
        kind = "an object" if isinstance(value, Mapping) else "a list" if isinstance(value, list | tuple) else \
            f"a {type(value).__name__}"
        lines.append(f"its field {name!r} holds {kind} ({json.dumps(value, default=str)[:40]}), not {wanted}")
    return lines


def _is_text(value: object) -> bool:
    return value is None or isinstance(value, str | int | float) and not isinstance(value, bool)


def _csv_rows(text: str, source: str) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if not ({"key", "id"} & set(fields)) or "title" not in fields:
        raise ReferenceFileError(f"{source}: a references CSV needs a header with key and title (and abstract, "
                                 f"authors, year), not {reader.fieldnames}")
    return [{k.strip().lower(): v for k, v in row.items() if k} for row in reader]


def _json_rows(text: str, source: str, *, lines: bool) -> list[dict]:
    text = text.lstrip("\ufeff")
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
